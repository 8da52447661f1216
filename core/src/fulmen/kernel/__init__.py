"""fulmen's kernel: the plugin machinery, and nothing about training.

``kinds`` (the one table of plugin kinds), ``hookspecs`` (the pluggy hook specifications),
``records`` (what hooks yield: lazy targets), ``manager`` (entry-point discovery, broken-plugin
isolation), ``catalog`` (every record by kind and name), ``compose`` and ``connector``
(selecting and building plugins for a Trainer or Lite in one validation round), ``legacy``
(old spellings) and ``known_plugins`` (which distribution provides a missing name).

The contracts plugins implement are in :mod:`fulmen.api`; the training framework built on both
(``Trainer``, ``Module``, ``Lite``, callbacks, loggers) is the rest of the package. Importing
this package imports none of its modules (and no torch).
"""
