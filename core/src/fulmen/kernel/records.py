"""The records a plugin yields from its collect hooks.

A record is data: a name, aliases, a lazy ``"package.module:Attr"`` target that is imported only
when the name is selected, constructor arguments, and the compatibility facts composition checks.
One class can back several names through ``init_kwargs``::

    StrategySpec(name="ddp_spawn", target="my_pkg.ddp:DDPStrategy",
                 init_kwargs={"start_method": "spawn"}, description="DDP, spawned workers")

Records are validated when they are created; a bad one raises :class:`~fulmen.PluginError`, which
the plugin manager reports with the plugin's name and distribution.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar

from fulmen.errors import PluginError

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")
_MODULE_PATTERN = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_TARGET_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_TUPLE_FIELDS = ("aliases", "deprecated_aliases", "accelerators", "precisions", "strategies")


def _check_name(spec: str, what: str, value: object) -> str:
    if not isinstance(value, str) or not NAME_PATTERN.match(value):
        raise PluginError(
            f"invalid {spec}: {what} {value!r} must be a lower-case string of letters, digits, "
            "'_' and '-' that starts with a letter or digit (e.g. 'ddp', '16-mixed')"
        )
    return value


def load_target(path: str, owner: str) -> type:
    """Import ``"package.module:Attr"`` and return the class; ``owner`` names who asked for it."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise PluginError(
            f"{owner}: cannot import its target {path!r}: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(obj, type):
        raise PluginError(f"{owner}: target {path!r} is {type(obj).__name__}, not a class")
    return obj


@dataclass(frozen=True, kw_only=True)
class Spec:
    """Fields every record has.

    name: the canonical registered name (``"ddp"``); lower case, ``[a-z0-9][a-z0-9_-]*``.
    target: ``"package.module:Attr"`` (imported only when selected) or the class itself.
    aliases: other names that select this record silently (``"gpu"`` for ``"cuda"``).
    deprecated_aliases: legacy names still accepted with a deprecation warning that shows ``name``.
    description: one line for ``fulmen plugins`` and error messages.
    init_kwargs: keyword arguments the target is constructed with.
    requires: modules the target needs that its distribution does not install (``"horovod"``);
        listing checks them without importing anything, and selecting the name while one is
        missing is an error that says so.
    install: how to get what ``requires`` names, for that error (``"make install-horovod"``).
    fallback: the record gives way to another plugin's record of the same name or alias (it is
        left out, with no clash): a generic plugin covering whatever no dedicated plugin
        registers (``torch_accelerator``). Two fallbacks of one name still clash.
    """

    kind: ClassVar[str] = "plugin"

    name: str
    target: str | type
    aliases: Sequence[str] = ()
    deprecated_aliases: Sequence[str] = ()
    description: str = ""
    init_kwargs: Mapping[str, Any] = field(default_factory=dict)
    requires: Sequence[str] = ()
    install: str = ""
    fallback: bool = False

    def __post_init__(self) -> None:
        label = f"{type(self).__name__}(name={self.name!r})"
        _check_name(label, "name", self.name)
        own = {f.name for f in fields(self)}
        for fname in (f for f in _TUPLE_FIELDS if f in own):
            value = getattr(self, fname)
            if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
                raise PluginError(f"invalid {label}: {fname} must be a list or tuple of names, "
                                  f"got {value!r}")
            names = tuple(_check_name(label, f"{fname} entry", v) for v in value)
            object.__setattr__(self, fname, names)
        if isinstance(self.target, str):
            if not _TARGET_PATTERN.match(self.target):
                raise PluginError(f"invalid {label}: target {self.target!r} must look like "
                                  "'package.module:ClassName'")
        elif not isinstance(self.target, type):
            raise PluginError(f"invalid {label}: target must be a 'package.module:Attr' string or "
                              f"a class, got {type(self.target).__name__}")
        if not isinstance(self.description, str):
            raise PluginError(f"invalid {label}: description must be a string")
        if not isinstance(self.init_kwargs, Mapping) or not all(
            isinstance(k, str) and k.isidentifier() for k in self.init_kwargs
        ):
            raise PluginError(f"invalid {label}: init_kwargs must map argument names to values, "
                              f"got {self.init_kwargs!r}")
        object.__setattr__(self, "init_kwargs", MappingProxyType(dict(self.init_kwargs)))
        if isinstance(self.requires, str) or not all(
                isinstance(m, str) and _MODULE_PATTERN.match(m) for m in self.requires):
            raise PluginError(f"invalid {label}: requires must be a list of importable module "
                              f"names, got {self.requires!r}")
        object.__setattr__(self, "requires", tuple(self.requires))
        if self.name in (*self.aliases, *self.deprecated_aliases):
            raise PluginError(f"invalid {label}: the name is also listed as an alias")

    @property
    def names(self) -> tuple[str, ...]:
        """The name, then aliases, then deprecated aliases."""
        return (self.name, *self.aliases, *self.deprecated_aliases)

    @property
    def target_path(self) -> str:
        """The target as ``"module:Attr"`` text, also when the record holds the class itself."""
        if isinstance(self.target, str):
            return self.target
        return f"{self.target.__module__}:{self.target.__qualname__}"

    def load(self) -> type:
        """Import and return the target class (the only place a target is imported)."""
        if isinstance(self.target, type):
            return self.target
        return load_target(self.target, f"{self.kind} {self.name!r}")

    def missing(self) -> tuple[str, ...]:
        """The modules of ``requires`` that cannot be found (checked without importing them)."""
        import importlib.util

        return tuple(m for m in self.requires if importlib.util.find_spec(m.split(".")[0]) is None)

    def require(self) -> None:
        """Raise ``ConfigurationError`` naming what ``requires`` lists and is not installed."""
        missing = self.missing()
        if missing:
            from fulmen.errors import ConfigurationError

            how = f"; {self.install}" if self.install else ""
            raise ConfigurationError(f"{self.kind}={self.name!r} needs {', '.join(missing)} "
                                     f"(not installed){how}")

    def create(self, **overrides: Any) -> Any:
        """Construct the target with ``init_kwargs`` (and ``overrides``); set ``.name``."""
        self.require()
        instance = self.load()(**{**self.init_kwargs, **overrides})
        instance.name = self.name
        return instance

    def facts(self) -> dict[str, Any]:
        """The record as plain data (for ``fulmen plugins --json``)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "target":
                value = self.target_path
            elif isinstance(value, Mapping):
                value = {k: repr(v) if not isinstance(v, str | int | float | bool | None) else v
                         for k, v in value.items()}
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


@dataclass(frozen=True, kw_only=True)
class AcceleratorSpec(Spec):
    """An accelerator (``cpu``, ``cuda``...). ``device_type`` is the torch device type it drives.

    distributed_backend: the ``torch.distributed`` backend for that device type (``"gloo"``,
    ``"nccl"``, a vendor's), or ``""`` when it has none; strategies whose record sets
    ``needs_distributed_backend`` run only on accelerators that name one.
    """

    kind: ClassVar[str] = "accelerator"
    device_type: str = ""
    distributed_backend: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        for fname in ("device_type", "distributed_backend"):
            if not isinstance(getattr(self, fname), str):
                raise PluginError(f"invalid AcceleratorSpec(name={self.name!r}): {fname} must be "
                                  f"a string, got {getattr(self, fname)!r}")


@dataclass(frozen=True, kw_only=True)
class StrategySpec(Spec):
    """A distributed strategy. How its processes start is the strategy's own business
    (:meth:`fulmen.Strategy.create_launcher`), not the record's.

    accelerators: accelerator names it runs on (empty: any).
    needs_distributed_backend: it joins a ``torch.distributed`` process group, so it runs only on
        accelerators whose record names a ``distributed_backend`` (with ``accelerators`` empty:
        on every such accelerator, including device types added by other packages).
    precisions: precision names it supports (empty: any).
    max_devices: most devices it drives per node (``1`` for ``single_device``); None: no limit.
    multi_node: whether it can span several nodes.
    interactive: whether it works in a notebook or REPL (a script re-launch does not).
    """

    kind: ClassVar[str] = "strategy"
    accelerators: Sequence[str] = ()
    needs_distributed_backend: bool = False
    precisions: Sequence[str] = ()
    max_devices: int | None = None
    multi_node: bool = True
    interactive: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.needs_distributed_backend, bool):
            raise PluginError(f"invalid StrategySpec(name={self.name!r}): "
                              "needs_distributed_backend must be True or False, got "
                              f"{self.needs_distributed_backend!r}")
        if self.max_devices is not None and (
            not isinstance(self.max_devices, int) or self.max_devices < 1
        ):
            raise PluginError(f"invalid StrategySpec(name={self.name!r}): max_devices must be a "
                              f"positive int or None, got {self.max_devices!r}")


@dataclass(frozen=True, kw_only=True)
class PrecisionSpec(Spec):
    """A precision backend. accelerators / strategies: where it applies (empty: everywhere)."""

    kind: ClassVar[str] = "precision"
    accelerators: Sequence[str] = ()
    strategies: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class EnvironmentSpec(Spec):
    """A cluster environment. Detection is the ``fulmen_detect_environment`` hook's job."""

    kind: ClassVar[str] = "environment"


@dataclass(frozen=True, kw_only=True)
class LoggerSpec(Spec):
    """An experiment tracker (``csv``, ``tensorboard``, ``wandb``, ``mlflow``...): selected by
    ``Trainer(logger="name")``, ``Lite(loggers=[...])`` or ``--trainer.logger=name``. The target
    subclasses :class:`fulmen.api.Logger` and is built with
    :meth:`~fulmen.api.Logger.for_root_dir` (the Trainer's ``default_root_dir`` and the record's
    ``init_kwargs``). ``requires`` names the tracker's client library (``"wandb"``), checked
    without importing it, so that a missing one says what to install."""

    kind: ClassVar[str] = "logger"

    def create(self, root_dir: str = ".", **overrides: Any) -> Any:
        """The logger: ``Target.for_root_dir(root_dir, **init_kwargs, **overrides)`` (its
        ``name`` is the tracker's experiment name, so it is not set here)."""
        self.require()
        cls = self.load()
        from fulmen.api.logger import Logger

        if not issubclass(cls, Logger):
            raise PluginError(f"logger {self.name!r}: target {self.target_path!r} does not "
                              "subclass fulmen.api.Logger")
        return cls.for_root_dir(root_dir, **{**self.init_kwargs, **overrides})



@dataclass(frozen=True, kw_only=True)
class NoticeSpec(Spec):
    """A source of stop notices (a cloud provider's spot or preemption notice, a scheduler's
    signal): selected by name in ``Trainer(plugins=["aws_spot"])``, ``Lite(plugins=[...])`` or
    ``--trainer.plugins='[aws_spot]'``. The target subclasses
    :class:`fulmen.api.notice.PreemptionNotice` and is built with ``init_kwargs``."""

    kind: ClassVar[str] = "notice"
