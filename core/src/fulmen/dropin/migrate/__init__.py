"""``fulmen migrate PATH... [--diff] [--check]``: rewrite Lightning scripts and configs to run on
fulmen with plain ``python``. Every Lightning name becomes the fulmen name that serves it under
``fulmen run`` (one table: :mod:`fulmen.dropin.names`).

One job per module:

- :mod:`.resolve`: the fulmen name written for a Lightning name or dotted path;
- :mod:`.python`: the libcst codemod of a Python file (imports, uses of the modules they bind,
  Lightning's 1.x -> 2.x upgrade, whose tables are in :mod:`.upgrade`);
- :mod:`.python_targets`: Lightning dotted paths in string literals (Hydra ``_target_``,
  ``class_path``);
- :mod:`.yaml_targets`: ``_target_``/``class_path`` values in YAML configs, rewritten in place;
- :mod:`.command`: the command line (files, ``--diff``, ``--check``, notes as ``file:line``).

The Python parts need libcst (``pip install 'fulmen[migrate]'``); names are imported on first
use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "main": "fulmen.dropin.migrate.command",
    "migrate_file": "fulmen.dropin.migrate.command",
    "migrate_source": "fulmen.dropin.migrate.python",
    "migrate_yaml": "fulmen.dropin.migrate.yaml_targets",
    "target_path": "fulmen.dropin.migrate.resolve",
    "Result": "fulmen.dropin.migrate.result",
}
__all__ = ["Result", "main", "migrate_file", "migrate_source", "migrate_yaml", "target_path"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from fulmen.dropin.migrate.command import main, migrate_file
    from fulmen.dropin.migrate.python import migrate_source
    from fulmen.dropin.migrate.resolve import target_path
    from fulmen.dropin.migrate.result import Result
    from fulmen.dropin.migrate.yaml_targets import migrate_yaml
