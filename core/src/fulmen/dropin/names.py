"""Which fulmen object answers each Lightning name.

Lightning ships one tree under three roots: ``lightning`` (``lightning.pytorch``,
``lightning.fabric``), ``pytorch_lightning`` (= ``lightning.pytorch``) and ``lightning_fabric``
(= ``lightning.fabric``). :func:`canonical` folds the last two into the first, and
:data:`MODULES` says, per canonical module, where its names come from:

- ``sources``: fulmen modules whose ``__all__`` names are served as they are;
- ``names``: a Lightning name served by another fulmen name (``"LightningModule":
  "fulmen.module:Module"``);
- ``lenient``: Lightning's submodules of it (``callbacks.model_checkpoint``) serve the same
  names, since scripts import classes from the file that defines them.

A module or name that is neither here nor in a source has no fulmen counterpart: importing it is
an error that names it (:class:`fulmen.errors.LightningNameError`). This module imports nothing
but the standard library, so ``fulmen run`` installs the hook without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

ROOTS = ("lightning", "pytorch_lightning", "lightning_fabric")
#: The Lightning release whose behaviour fulmen follows; what ``lightning.__version__`` says.
LIGHTNING_VERSION = "2.6.0"


@dataclass(frozen=True)
class ModuleMap:
    """Where one Lightning module's names come from (see the module docstring)."""

    sources: tuple[str, ...] = ()
    names: dict[str, str] = field(default_factory=dict)
    lenient: bool = False


_CORE = {"LightningModule": "fulmen.module:Module",
         "LightningDataModule": "fulmen.datamodule:DataModule"}
_TOP = {**_CORE, "Trainer": "fulmen.trainer:Trainer", "Callback": "fulmen.callbacks.base:Callback",
        "seed_everything": "fulmen.seed:seed_everything"}
_FABRIC = {"Fabric": "fulmen.lite:Fabric", "seed_everything": "fulmen.seed:seed_everything"}
_SEED = {n: f"fulmen.seed:{n}" for n in ("seed_everything", "reset_seed", "isolate_rng",
                                          "pl_worker_init_function")}
_PRECISION = {"Precision": "fulmen.api:Precision",
              "DoublePrecision": "fulmen_precision:Precision64",
              "MixedPrecision": "fulmen_precision:MixedPrecision",
              "HalfPrecision": "fulmen_precision:HalfPrecision"}
_IO = {n: f"fulmen.api:{n}" for n in ("CheckpointIO", "AsyncCheckpointIO", "TorchCheckpointIO")}
_ENVIRONMENTS = {"ClusterEnvironment": "fulmen.api:ClusterEnvironment"}
_STRATEGIES = {"Strategy": "fulmen.api:Strategy",
               "DeepSpeedStrategy": "fulmen_deepspeed:DeepSpeedStrategy"}
_ACCELERATORS = {"Accelerator": "fulmen.api:Accelerator"}
_UTILITIES = {"is_overridden": "fulmen.utilities.model_helpers:is_overridden",
              "MisconfigurationException": "fulmen.errors:ConfigurationError"}
_TYPES = ("fulmen.utilities.types",)

MODULES: dict[str, ModuleMap] = {
    "lightning": ModuleMap(names={**_TOP, "Fabric": "fulmen.lite:Fabric"}),
    # ------------------------------------------------------------------ lightning.pytorch
    "lightning.pytorch": ModuleMap(
        names={**_TOP, "cli_lightning_logo": "fulmen.dropin.extras:cli_lightning_logo"}),
    "lightning.pytorch.core": ModuleMap(names=_CORE, lenient=True),
    "lightning.pytorch.trainer": ModuleMap(names={"Trainer": "fulmen.trainer:Trainer"},
                                           lenient=True),
    "lightning.pytorch.trainer.states": ModuleMap(("fulmen.trainer.states",)),
    "lightning.pytorch.callbacks": ModuleMap(("fulmen.callbacks",), lenient=True),
    "lightning.pytorch.loggers": ModuleMap(
        ("fulmen.loggers",), {"LightningLoggerBase": "fulmen.loggers:Logger"},  # 1.x name
        lenient=True),
    "lightning.pytorch.profilers": ModuleMap(("fulmen.profilers",), lenient=True),
    "lightning.pytorch.tuner": ModuleMap(("fulmen.tuner",), lenient=True),
    "lightning.pytorch.cli": ModuleMap(
        names={"LightningCLI": "fulmen.cli:FulmenCLI",
               "SaveConfigCallback": "fulmen.cli:SaveConfigCallback",
               "ReduceLROnPlateau": "fulmen.cli.stages:ReduceLROnPlateau",
               "LightningArgumentParser": "fulmen.cli.stages:LightningArgumentParser"}),
    # Lightning 1.x homes of names that moved
    "lightning.pytorch.utilities.cli": ModuleMap(
        names={"LightningCLI": "fulmen.cli:FulmenCLI",
               "SaveConfigCallback": "fulmen.cli:SaveConfigCallback"}),
    "lightning.pytorch.lite": ModuleMap(names={"LightningLite": "fulmen.lite:Lite"}),
    "lightning.pytorch.strategies": ModuleMap(("fulmen_strategies",), _STRATEGIES, lenient=True),
    "lightning.pytorch.accelerators": ModuleMap(("fulmen_accelerators",), _ACCELERATORS,
                                                lenient=True),
    "lightning.pytorch.plugins": ModuleMap(
        ("fulmen_environments",), {**_PRECISION, **_IO, **_ENVIRONMENTS}),
    "lightning.pytorch.plugins.precision": ModuleMap(names=_PRECISION, lenient=True),
    "lightning.pytorch.plugins.environments": ModuleMap(("fulmen_environments",), _ENVIRONMENTS,
                                                        lenient=True),
    "lightning.pytorch.plugins.io": ModuleMap(names=_IO, lenient=True),
    "lightning.pytorch.utilities": ModuleMap(("fulmen.utilities",), _UTILITIES),
    "lightning.pytorch.utilities.rank_zero": ModuleMap(("fulmen.utilities.rank_zero",)),
    "lightning.pytorch.utilities.seed": ModuleMap(names=_SEED),
    "lightning.pytorch.utilities.types": ModuleMap(_TYPES),
    "lightning.pytorch.utilities.imports": ModuleMap(("fulmen.dropin.extras",)),
    "lightning.pytorch.utilities.model_helpers": ModuleMap(names=_UTILITIES),
    "lightning.pytorch.utilities.exceptions": ModuleMap(names=_UTILITIES),
    "lightning.pytorch.utilities.model_summary": ModuleMap(("fulmen.utilities.model_summary",),
                                                           lenient=True),
    "lightning.pytorch.utilities.apply_func": ModuleMap(("fulmen.utilities.apply_func",)),
    "lightning.pytorch.demos": ModuleMap(("fulmen.demos",)),
    "lightning.pytorch.demos.boring_classes": ModuleMap(("fulmen.demos.boring_classes",)),
    "lightning.pytorch.demos.transformer": ModuleMap(("fulmen.demos.transformer",)),
    "lightning.pytorch.demos.lstm": ModuleMap(("fulmen.demos.lstm",)),
    "lightning.pytorch.demos.mnist_datamodule": ModuleMap(("fulmen.demos.mnist_datamodule",)),
    # ------------------------------------------------------------------ lightning.fabric
    "lightning.fabric": ModuleMap(
        names={**_FABRIC, "is_wrapped": "fulmen.lite_wrappers:is_wrapped"}),
    "lightning.fabric.fabric": ModuleMap(names=_FABRIC),
    "lightning.fabric.utilities": ModuleMap(("fulmen.utilities",)),
    "lightning.fabric.utilities.seed": ModuleMap(names=_SEED),
    "lightning.fabric.utilities.rank_zero": ModuleMap(("fulmen.utilities.rank_zero",)),
    "lightning.fabric.utilities.types": ModuleMap(_TYPES),
    "lightning.fabric.utilities.apply_func": ModuleMap(("fulmen.utilities.apply_func",)),
    "lightning.fabric.utilities.throughput": ModuleMap(("fulmen.utilities.throughput",)),
    "lightning.fabric.strategies": ModuleMap(("fulmen_strategies",), _STRATEGIES, lenient=True),
    "lightning.fabric.accelerators": ModuleMap(("fulmen_accelerators",), _ACCELERATORS,
                                               lenient=True),
    "lightning.fabric.plugins": ModuleMap(
        ("fulmen_environments",), {**_PRECISION, **_IO, **_ENVIRONMENTS}),
    "lightning.fabric.plugins.precision": ModuleMap(names=_PRECISION, lenient=True),
    "lightning.fabric.plugins.environments": ModuleMap(("fulmen_environments",), _ENVIRONMENTS,
                                                       lenient=True),
    "lightning.fabric.plugins.io": ModuleMap(names=_IO, lenient=True),
    "lightning.fabric.loggers": ModuleMap(("fulmen.loggers",), lenient=True),
}


def canonical(fullname: str) -> str | None:
    """``fullname`` under the ``lightning`` root, or None when it is not a Lightning name."""
    root, _, rest = fullname.partition(".")
    if root not in ROOTS:
        return None
    prefix = {"lightning": "lightning", "pytorch_lightning": "lightning.pytorch",
              "lightning_fabric": "lightning.fabric"}[root]
    return f"{prefix}.{rest}" if rest else prefix


def lookup(fullname: str) -> ModuleMap | None:
    """The map for Lightning module ``fullname`` (any root), or None: no fulmen counterpart."""
    name = canonical(fullname)
    if name is None:
        return None
    if name in MODULES:
        return MODULES[name]
    parent = name
    while "." in parent:
        parent = parent.rpartition(".")[0]
        found = MODULES.get(parent)
        if found is not None:
            return found if found.lenient else None
    return None


def counterparts(fullname: str) -> list[str]:
    """The Lightning modules next to ``fullname`` that do have a fulmen counterpart (for errors)."""
    name = canonical(fullname) or fullname
    parent = name.rpartition(".")[0] if "." in name else name
    root = fullname.partition(".")[0]
    here = sorted(m for m in MODULES if m.rpartition(".")[0] == parent)
    if root != "lightning":  # show them under the root the script used
        prefix = {"pytorch_lightning": "lightning.pytorch",
                  "lightning_fabric": "lightning.fabric"}[root]
        here = [root + m[len(prefix):] for m in here if m.startswith(prefix)]
    return here


def exports(module: ModuleType) -> list[str]:
    """The names a source module serves: its ``__all__``, else the public functions and classes
    it defines itself (not what it imported)."""
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return list(declared)
    return [name for name, value in vars(module).items() if not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__]
