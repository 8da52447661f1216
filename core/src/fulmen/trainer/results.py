"""What ``self.log`` records, and how step and epoch values reach callbacks, the progress bar
and the logger.

Per step, a log call stores a detached tensor (no ``.item()``, no device sync, no dict
rebuilt); epoch values are weighted means (or the chosen reduction) computed once at the end of
the epoch. Floats are made only when something reads them.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import WarningCache

# hook → (on_step, on_epoch) defaults; hooks not listed refuse self.log.
STEP, EPOCH = (True, False), (False, True)
DEFAULTS: dict[str, tuple[bool, bool]] = {
    **dict.fromkeys(("training_step", "on_train_batch_start", "on_train_batch_end",
                     "on_before_backward", "on_after_backward", "on_before_optimizer_step",
                     "on_before_zero_grad", "backward", "optimizer_step",
                     "configure_gradient_clipping", "clip_gradients", "optimizer_zero_grad"),
                    STEP),
    **dict.fromkeys(("on_train_start", "on_train_epoch_start", "on_train_epoch_end",
                     "validation_step", "on_validation_batch_start", "on_validation_batch_end",
                     "on_validation_start", "on_validation_epoch_start",
                     "on_validation_epoch_end", "test_step", "on_test_batch_start",
                     "on_test_batch_end", "on_test_start", "on_test_epoch_start",
                     "on_test_epoch_end"), EPOCH),
}
REDUCTIONS = {"mean", "sum", "max", "min"}
_FOLD_AT = 1024
_SHARED_NAME = WarningCache()


def _metric_type() -> type | None:
    """torchmetrics.Metric when torchmetrics is already imported (never imported here)."""
    module = sys.modules.get("torchmetrics")
    return getattr(module, "Metric", None) if module is not None else None


class HostScalar(tuple[Any, torch.dtype]):
    """A step value logged from a CPU tensor, read at once (on the CPU there is nothing to wait
    for) and kept as a Python number: holding the tensor would keep its storage alive into
    the next step, which measurably slows torch's allocations there (docs/performance.md).

    Built as ``HostScalar((tensor.tolist(), tensor.dtype))``: a ``(number, dtype)`` pair
    (``number``: a one-element list for shape ``(1,)``), so that building one runs no Python
    code."""

    __slots__ = ()

    number = property(operator.itemgetter(0))
    dtype = property(operator.itemgetter(1))

    def tensor(self) -> torch.Tensor:
        """The value as the tensor it was logged as (dtype and shape)."""
        return torch.tensor(self.number, dtype=self.dtype)

    def __float__(self) -> float:
        number = self.number
        while type(number) is list:
            number = number[0]
        return float(number)


def step_tensor(value: torch.Tensor | HostScalar) -> torch.Tensor:
    """A stored step value as a tensor."""
    return value.tensor() if isinstance(value, HostScalar) else value


@dataclass
class LoggedValue:
    """One ``(hook, name)``: its options, last step value and epoch accumulation."""

    name: str
    hook: str
    prog_bar: bool
    logger: bool
    on_step: bool
    on_epoch: bool
    reduce_fx: str
    sync_dist: bool
    rank_zero_only: bool
    suffix: str = ""  # "/dataloader_idx_<i>" with several eval dataloaders
    step_name: str = ""
    epoch_name: str = ""
    metric: Any = None  # a torchmetrics.Metric, computed at epoch end
    values: list[torch.Tensor] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    #: values[0] is a running sum already weighted by its sizes[0] (after a fold)
    carried: bool = False
    #: the Metric's epoch value was computed and it was not logged again since
    taken: bool = False

    def __post_init__(self) -> None:
        both = self.on_step and self.on_epoch  # Lightning: "loss_step/dataloader_idx_0"
        base = self.name
        self.step_name = (f"{base}_step" if both else base) + self.suffix
        self.epoch_name = (f"{base}_epoch" if both else base) + self.suffix
        self.name = base + self.suffix

    def add(self, value: torch.Tensor, size: int) -> None:
        self.values.append(value)
        self.sizes.append(size)
        if len(self.values) >= _FOLD_AT:
            folded = self._running_sum() if self.reduce_fx in ("mean", "sum") else self.reduce()
            self.values, self.sizes, self.carried = [folded], [sum(self.sizes)], True

    def _running_sum(self) -> torch.Tensor:
        """Lightning's accumulation, one addition per logged value in the order logged (value
        times batch size for a mean), so the epoch value has the same bits as Lightning's."""
        total: torch.Tensor | None = None
        for i, (value, size) in enumerate(zip(self.values, self.sizes, strict=True)):
            if value.dtype not in (torch.float32, torch.float64):
                value = value.float()
            if self.reduce_fx == "mean" and not (self.carried and i == 0):
                value = value * size
            total = value if total is None else total + value
        assert total is not None
        return total

    def reduce(self) -> torch.Tensor:
        """The reduction of what was logged this epoch."""
        if self.reduce_fx == "mean":
            return self._running_sum() / sum(self.sizes)
        if self.reduce_fx == "sum":
            return self._running_sum()
        return getattr(torch.stack([v.float() for v in self.values]), self.reduce_fx)()

    def epoch_value(self) -> torch.Tensor | None:
        """The epoch's reduction; the accumulation is consumed (a second call gives None
        unless new values were logged since)."""
        if self.metric is not None:
            if self.taken:
                return None
            # computed even if never updated (torchmetrics warns), as Lightning does
            value = self.metric.compute()
            self.metric.reset()
            self.taken = True
            return torch.as_tensor(value).detach()
        if not self.values:
            return None
        value = self.reduce()
        self.values, self.sizes, self.carried = [], [], False
        return value

    def take_sum(self) -> tuple[torch.Tensor, int] | None:
        """A mean's weighted sum and total batch size (consumed, as :meth:`epoch_value`)."""
        if not self.values:
            return None
        total, size = self._running_sum(), sum(self.sizes)
        self.values, self.sizes, self.carried = [], [], False
        return total, size


class Results:
    """The values logged during one stage (a training epoch, a validation run...)."""

    def __init__(self, stage: str, reduce: Callable[[torch.Tensor, str], torch.Tensor]) -> None:
        self.stage = stage
        self.hook = ""  # set by the Trainer around each hook call
        self.batch: Any = None  # the current batch, for batch-size inference
        self.dataloader_suffix = ""
        self._reduce = reduce
        self._pending: dict[str, Any] = {}  # epoch accumulations from a mid-epoch checkpoint
        self.entries: dict[tuple[str, str], LoggedValue] = {}
        #: step_name -> last value (a HostScalar for a CPU value)
        self.step_values: dict[str, torch.Tensor | HostScalar] = {}
        #: (hook, name) -> step_name of the entries whose value is only kept as the step's
        #: (per step only, not synced, not a Metric, no dataloader suffix): ``log_step_value``
        self._step_only: dict[tuple[str, str], str] = {}
        self._batch_size_cache: tuple[int, int] | None = None

    # ------------------------------------------------------------------ self.log

    def log_step_value(self, name: str, value: Any) -> bool:
        """``Module.log``'s fast path, for a value logged again under a name this hook logs per
        step only (not synced, not per epoch, not a Metric, no dataloader suffix), as a CPU
        scalar tensor: keeps it as :meth:`log` would and returns True; False for everything
        else, which :meth:`log` takes (with every check)."""
        step_name = self._step_only.get((self.hook, name))
        if step_name is None or type(value) is not torch.Tensor or not value.is_cpu or \
                value.numel() != 1:
            return False
        self.step_values[step_name] = HostScalar((value.tolist(), value.dtype))
        return True

    def log(self, name: str, value: Any, prog_bar: bool, logger: bool, on_step: bool | None,
            on_epoch: bool | None, reduce_fx: Any, sync_dist: bool, rank_zero_only: bool,
            batch_size: int | None, add_dataloader_idx: bool = True) -> None:
        """``Module.log`` (its arguments, positionally: it runs every step)."""
        suffix = self.dataloader_suffix if add_dataloader_idx else ""
        entry = self.entries.get((self.hook, name + suffix if suffix else name))
        if entry is None:
            if add_dataloader_idx and isinstance(name, str) and "/dataloader_idx_" in name:
                raise ConfigurationError(
                    f"self.log({name!r}): the name holds '/dataloader_idx_', which fulmen "
                    "appends itself with several dataloaders (add_dataloader_idx=True). Log "
                    f"{name.split('/dataloader_idx_')[0]!r}, or pass add_dataloader_idx=False "
                    "to name it yourself")
            entry = self._register(name, suffix, value, prog_bar, logger, on_step, on_epoch,
                                   reduce_fx, sync_dist, rank_zero_only)
        if entry.metric is not None:
            entry.taken = False
            step_value = getattr(value, "_forward_cache", None)
            if entry.on_step and step_value is not None:
                self.step_values[entry.step_name] = torch.as_tensor(step_value).detach()
            return
        if type(value) is not torch.Tensor:
            value = self._as_tensor(name, value)
        elif value.numel() != 1:
            raise ConfigurationError(f"self.log({name!r}, ...) in {self.hook}: the value must be "
                                     f"a scalar, got a tensor of shape {tuple(value.shape)}; "
                                     "reduce it first (e.g. .mean())")
        if entry.on_step:
            step_value = value
            if entry.sync_dist and not entry.rank_zero_only:
                step_value = self._reduce(value.detach(), entry.reduce_fx)
            self.step_values[entry.step_name] = HostScalar((
                step_value.tolist(), step_value.dtype)) if step_value.is_cpu else \
                step_value.detach()
        if entry.on_epoch:
            entry.add(value.detach(),
                      batch_size if batch_size is not None else self._batch_size())

    def _register(self, name: str, suffix: str, value: Any, prog_bar: bool, logger: bool,
                  on_step: bool | None, on_epoch: bool | None, reduce_fx: Any, sync_dist: bool,
                  rank_zero_only: bool) -> LoggedValue:
        defaults = DEFAULTS.get(self.hook)
        if defaults is None:
            raise ConfigurationError(
                f"self.log({name!r}, ...) is not supported in {self.hook or 'this place'}; "
                f"log from one of: {', '.join(sorted(DEFAULTS))}")
        if not isinstance(name, str):
            raise ConfigurationError(f"self.log(name={name!r}): the name must be a non-empty "
                                     "string")
        if not name:  # Lightning logs it under ""
            _SHARED_NAME.warn("self.log('', ...): the name is empty; it is logged under '' as "
                              "in Lightning. Give it a name", category=UserWarning)
        fx = reduce_fx.__name__ if callable(reduce_fx) else reduce_fx
        fx = {"amax": "max", "amin": "min"}.get(fx, fx)
        if fx not in REDUCTIONS:
            raise ConfigurationError(f"self.log({name!r}, reduce_fx={reduce_fx!r}): use one of "
                                     f"{sorted(REDUCTIONS)}")
        on_step = defaults[0] if on_step is None else on_step
        on_epoch = defaults[1] if on_epoch is None else on_epoch
        if not (on_step or on_epoch):
            raise ConfigurationError(f"self.log({name!r}, on_step=False, on_epoch=False) logs "
                                     "nothing; set one of them")
        full = name + suffix
        for other in self.entries.values():
            if other.name == full and other.hook != self.hook:
                _SHARED_NAME.warn(
                    f"self.log({name!r}) is called from both {other.hook} and {self.hook}: "
                    f"where both give a value, the one logged from {self.hook} is the one "
                    "callbacks, the progress bar and the loggers see (Lightning's rule). Use "
                    "different names to keep both", category=RuntimeWarning)
                break
        metric_type = _metric_type()
        is_metric = metric_type is not None and isinstance(value, metric_type)
        entry = LoggedValue(name, self.hook, prog_bar, logger, on_step, on_epoch, fx, sync_dist,
                            rank_zero_only, suffix=suffix, metric=value if is_metric else None)
        self.entries[(self.hook, full)] = entry
        if on_step and not on_epoch and not (sync_dist or suffix or self.dataloader_suffix or
                                             is_metric):
            self._step_only[(self.hook, full)] = entry.step_name
        saved = self._pending.pop(f"{entry.hook}|{entry.name}", None)
        if saved is not None:
            entry.values, entry.sizes = list(saved["values"]), list(saved["sizes"])
            entry.carried = bool(saved.get("carried", False))
        return entry

    def _as_tensor(self, name: str, value: Any) -> torch.Tensor:
        if isinstance(value, bool) or not isinstance(value, int | float):
            try:  # numpy scalars and 0-d arrays
                import numpy as np

                if isinstance(value, np.generic | np.ndarray) and np.size(value) == 1:
                    return torch.as_tensor(value).reshape(())
            except ImportError:  # pragma: no cover
                pass
            raise ConfigurationError(f"self.log({name!r}, {value!r}) in {self.hook}: the value "
                                     "must be a number, a scalar tensor or a torchmetrics Metric,"
                                     f" not {type(value).__name__}")
        return torch.tensor(float(value))

    def _batch_size(self) -> int:
        batch = self.batch
        if self._batch_size_cache is not None and self._batch_size_cache[0] == id(batch):
            return self._batch_size_cache[1]
        size = _infer_batch_size(batch)
        self._batch_size_cache = (id(batch), size)
        return size

    # ------------------------------------------------------------------ reading

    def epoch_values(self) -> dict[str, tuple[LoggedValue, torch.Tensor]]:
        """Reduce every epoch-level value (with ``sync_dist`` across processes). A torchmetrics
        ``Metric`` is reset here whether it was logged per epoch or per step only (Lightning
        resets them all at the end of each epoch), so it never accumulates across epochs."""
        out = {}
        for entry in self.entries.values():
            if not entry.on_epoch:
                if entry.metric is not None and entry.metric.update_count:
                    entry.metric.reset()  # (once: the epoch's end may read twice)
                continue
            synced = entry.sync_dist and not entry.rank_zero_only and entry.metric is None
            if synced and entry.reduce_fx == "mean":
                # Lightning's synced mean: the processes' weighted sums over their summed
                # batch sizes (each averaged over the processes), not a mean of means
                taken = entry.take_sum()
                if taken is None:
                    continue
                total, size = taken
                count = torch.tensor(size, device=total.device)
                out[entry.epoch_name] = (entry, self._reduce(total, "mean")
                                         / self._reduce(count, "mean"))
                continue
            value = entry.epoch_value()
            if value is None:
                continue
            if synced:
                value = self._reduce(value, entry.reduce_fx)
            out[entry.epoch_name] = (entry, value)
        return out

    def entry_for_step_name(self) -> dict[str, LoggedValue]:
        return {e.step_name: e for e in self.entries.values() if e.on_step}

    def state_dict(self) -> dict[str, Any]:
        """Epoch accumulations, for a mid-epoch checkpoint."""
        return {f"{e.hook}|{e.name}": {"values": list(e.values), "sizes": list(e.sizes),
                                       "carried": e.carried}
                for e in self.entries.values() if e.on_epoch and e.metric is None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Accumulations are restored when their first value of the epoch is logged again."""
        self._pending = dict(state)


class CallbackMetrics(dict[str, Any]):
    """What ``trainer.callback_metrics`` returns: the latest values, computed when read, whose
    writes (``[name] = value``, ``update``) also land in the Trainer's metrics, as Lightning's
    callbacks expect (``LearningRateMonitor`` adds ``lr-Adam`` for ``ModelCheckpoint`` to
    monitor). Removing a key affects only this copy."""

    def __init__(self, values: dict[str, Any], target: dict[str, Any]) -> None:
        super().__init__(values)
        self._target = target

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        self._target[name] = value

    def update(self, *args: Any, **kwargs: Any) -> None:
        new = dict(*args, **kwargs)
        super().update(new)
        self._target.update(new)

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name not in self:
            self[name] = default
        return self[name]


def _infer_batch_size(batch: Any) -> int:
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.ndim else 1
    if isinstance(batch, dict):
        for value in batch.values():
            size = _infer_batch_size(value)
            if size:
                return size
    if isinstance(batch, list | tuple):
        for value in batch:
            size = _infer_batch_size(value)
            if size:
                return size
    return 1
