"""Type names Lightning users import from ``lightning.pytorch.utilities.types`` and
``lightning.fabric.utilities.types`` (for annotations; fulmen checks values, not these)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar, runtime_checkable

import torch
from torch import Tensor
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

from fulmen.trainer.optim import LRSchedulerConfig

__all__ = [
    "CollectibleGroup",
    "EVAL_DATALOADERS",
    "LRSchedulerConfig",
    "LRSchedulerConfigType",
    "LRSchedulerPLType",
    "LRSchedulerType",
    "LRSchedulerTypeTuple",
    "LRSchedulerTypeUnion",
    "Optimizable",
    "OptimizerConfig",
    "OptimizerLRScheduler",
    "OptimizerLRSchedulerConfig",
    "STEP_OUTPUT",
    "Steppable",
    "TRAIN_DATALOADERS",
    "_DEVICE",
    "_EVALUATE_OUTPUT",
    "_MAP_LOCATION_TYPE",
    "_METRIC",
    "_NUMBER",
    "_PARAMETERS",
    "_PATH",
    "_PREDICT_OUTPUT",
    "_Stateful",
]

_PATH = str | Path
_DEVICE = torch.device | str | int
_MAP_LOCATION_TYPE = _DEVICE | Callable[..., Any] | dict[_DEVICE, _DEVICE] | None
_PARAMETERS = Iterator[torch.nn.Parameter]
_NUMBER = int | float
_METRIC = Tensor | _NUMBER
STEP_OUTPUT = Tensor | Mapping[str, Any] | None
_EVALUATE_OUTPUT = list[Mapping[str, float]]
_PREDICT_OUTPUT = list[Any] | list[list[Any]]
TRAIN_DATALOADERS = Any
EVAL_DATALOADERS = Any
LRSchedulerTypeTuple = (LRScheduler, ReduceLROnPlateau)
LRSchedulerTypeUnion = LRScheduler | ReduceLROnPlateau
LRSchedulerType = type[LRScheduler] | type[ReduceLROnPlateau]
LRSchedulerPLType = LRScheduler | ReduceLROnPlateau

_DictKey = TypeVar("_DictKey")


@runtime_checkable
class _Stateful(Protocol[_DictKey]):
    """An object with ``state_dict()`` and ``load_state_dict()``."""

    def state_dict(self) -> dict[_DictKey, Any]: ...

    def load_state_dict(self, state_dict: dict[_DictKey, Any]) -> None: ...


@runtime_checkable
class CollectibleGroup(Protocol):
    def size(self) -> int: ...

    def rank(self) -> int: ...


@runtime_checkable
class Steppable(Protocol):
    """Anything with ``step(closure=None)``."""

    def step(self, closure: Callable[[], float] | None = ...) -> float | None: ...


@runtime_checkable
class Optimizable(Steppable, Protocol):
    """An optimizer, structurally."""

    param_groups: list[dict[Any, Any]]
    defaults: dict[Any, Any]
    state: Any

    def state_dict(self) -> dict[str, dict[Any, Any]]: ...

    def load_state_dict(self, state_dict: dict[str, dict[Any, Any]]) -> None: ...


class LRSchedulerConfigType(TypedDict, total=False):
    scheduler: Any
    name: str | None
    interval: str
    frequency: int
    reduce_on_plateau: bool
    monitor: str | None
    strict: bool


class OptimizerConfig(TypedDict):
    optimizer: Optimizer


class OptimizerLRSchedulerConfig(TypedDict, total=False):
    optimizer: Optimizer
    lr_scheduler: LRSchedulerTypeUnion | LRSchedulerConfigType
    monitor: str


OptimizerLRScheduler = (
    Optimizer
    | Sequence[Optimizer]
    | tuple[Sequence[Optimizer], Sequence[LRSchedulerTypeUnion | LRSchedulerConfig]]
    | OptimizerConfig
    | OptimizerLRSchedulerConfig
    | Sequence[OptimizerConfig]
    | Sequence[OptimizerLRSchedulerConfig]
    | None
)
