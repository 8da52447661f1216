"""fulmen's kernel: the plugin machinery, and nothing about training.

``kinds`` (the one table of plugin kinds), ``hookspecs`` (the pluggy hook specifications),
``records`` (what hooks yield: lazy targets), ``manager`` (pluggy's plugin manager with
entry-point discovery and broken-plugin isolation), ``plugin_info`` (what is known about each
plugin), ``catalog`` (every record by kind and name), ``compose`` and ``selection`` (selecting
and building plugins for a Trainer or Lite in one validation round, and reporting what was
selected), ``legacy`` (old spellings) and ``known_plugins`` (which distribution provides a
missing name).

The contracts plugins implement are in :mod:`fulmen.api`; the training framework built on both
(``Trainer``, ``Module``, ``Lite``, callbacks, loggers) is the rest of the package. Importing
this package imports none of its modules (and no torch).
"""
