"""Throughput and model FLOPs utilisation (MFU): ``Throughput``, ``ThroughputMonitor`` for
``fulmen.Lite``, ``measure_flops`` and ``get_available_flops`` — Lightning's
``lightning.fabric.utilities.throughput`` under the same names (adapted from MosaicML Composer's
speed monitor, as Lightning's)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from fulmen.utilities.rank_zero import rank_zero_only, rank_zero_warn

if TYPE_CHECKING:
    from fulmen.api import Accelerator, Precision
    from fulmen.lite import Lite

ThroughputMetrics = dict[str, int | float]


class Throughput:
    """Rolling throughput over the last ``window_size`` updates.

    ``compute()`` returns ``time``, ``batches``, ``samples`` (and ``lengths``) totals, and once the
    window is full ``device/batches_per_sec``, ``device/samples_per_sec``,
    ``device/items_per_sec`` (with lengths), ``device/flops_per_sec`` (with flops) and
    ``device/mfu`` (with ``available_flops``); with ``world_size > 1`` also the global
    ``batches_per_sec``, ``samples_per_sec``, ``items_per_sec``, ``flops_per_sec`` (per-device
    figures times the world size: every device is assumed equal).

    Args:
        available_flops: peak FLOPs/s of one device (``get_available_flops``).
        world_size: number of devices; global metrics are added when it is above 1.
        window_size: updates in the rolling window (at least 2).
        separator: between ``device`` and the metric name.
        using_sparse_model: the model uses 2:4 structured sparsity, so the peak is multiplied
            by ``sparse_cuda_acceleration_factor``; None assumes dense and warns once.
        sparse_cuda_acceleration_factor: the multiplier (at least 1).
    """

    def __init__(self, available_flops: float | None = None, world_size: int = 1,
                 window_size: int = 100, separator: str = "/",
                 using_sparse_model: bool | None = None,
                 sparse_cuda_acceleration_factor: float = 2.0) -> None:
        from fulmen.errors import ConfigurationError

        if sparse_cuda_acceleration_factor < 1.0:
            raise ConfigurationError(
                f"Throughput(sparse_cuda_acceleration_factor={sparse_cuda_acceleration_factor}):"
                " a sparsity factor cannot reduce the peak FLOPs; use a value >= 1")
        if world_size < 1:
            raise ConfigurationError(f"Throughput(world_size={world_size}): use a count >= 1")
        # the window looks at the difference between its first and last elements
        if window_size < 2:
            raise ConfigurationError(f"Throughput(window_size={window_size}): the rolling "
                                     "window needs at least 2 updates")
        if using_sparse_model is None and available_flops is not None:
            rank_zero_warn("MFU assumes dense model FLOPs (no sparsity acceleration). Set "
                           "'using_sparse_model=True' for MFU to use sparse FLOPs.")
        if using_sparse_model and available_flops is not None:
            available_flops = available_flops * sparse_cuda_acceleration_factor
        self.available_flops = available_flops
        self.separator = separator
        self.world_size = world_size
        # not deque(maxlen=): values must increase, and a mistake in the user's counters errs
        self._time: MonotonicWindow[float] = MonotonicWindow(maxlen=window_size)
        self._batches: MonotonicWindow[int] = MonotonicWindow(maxlen=window_size)
        self._samples: MonotonicWindow[int] = MonotonicWindow(maxlen=window_size)
        self._lengths: MonotonicWindow[int] = MonotonicWindow(maxlen=window_size)
        self._flops: deque[int] = deque(maxlen=window_size)

    @property
    def elapsed_time(self) -> float:
        """The last ``time`` given to ``update`` (0 before any)."""
        return self._time[-1] if self._time else 0.0

    def update(self, *, time: float, batches: int, samples: int, lengths: int | None = None,
               flops: int | None = None) -> None:
        """Record totals so far on this device: ``time`` (seconds since the start), ``batches``,
        ``samples``, ``lengths`` (items, e.g. tokens) — each increasing with every call — and
        ``flops`` done since the previous call (``measure_flops`` times the batches)."""
        self._time.append(time)
        if samples < batches:
            raise ValueError(f"Expected samples ({samples}) to be greater or equal than batches "
                             f"({batches})")
        self._batches.append(batches)
        self._samples.append(samples)
        if lengths is not None:
            if lengths < samples:
                raise ValueError(f"Expected lengths ({lengths}) to be greater or equal than "
                                 f"samples ({samples})")
            self._lengths.append(lengths)
            if len(self._samples) != len(self._lengths):
                raise RuntimeError(f"If lengths are passed ({len(self._lengths)}), there needs "
                                   f"to be the same number of samples ({len(self._samples)})")
        if flops is not None:
            self._flops.append(flops * self.world_size)  # summed over ranks

    def compute(self) -> ThroughputMetrics:
        """The metrics described in the class docstring."""
        sep = self.separator
        metrics: ThroughputMetrics = {"time": self._time[-1], "batches": self._batches[-1],
                                      "samples": self._samples[-1]}
        if self._lengths:
            metrics["lengths"] = self._lengths[-1]
        add_global = self.world_size > 1
        if len(self._time) == self._time.maxlen:
            elapsed_time = self._time[-1] - self._time[0]  # > 0: the window is monotonic
            dev_batches = (self._batches[-1] - self._batches[0]) / elapsed_time
            dev_samples = (self._samples[-1] - self._samples[0]) / elapsed_time
            metrics[f"device{sep}batches_per_sec"] = dev_batches
            metrics[f"device{sep}samples_per_sec"] = dev_samples
            if add_global:
                metrics["batches_per_sec"] = dev_batches * self.world_size
                metrics["samples_per_sec"] = dev_samples * self.world_size
            if len(self._lengths) == self._lengths.maxlen:
                dev_items = (self._lengths[-1] - self._lengths[0]) / elapsed_time
                metrics[f"device{sep}items_per_sec"] = dev_items
                if add_global:
                    metrics["items_per_sec"] = dev_items * self.world_size
        if len(self._flops) == self._flops.maxlen:
            elapsed_flops = sum(self._flops) - self._flops[0]
            flops_per_sec = elapsed_flops / (self._time[-1] - self._time[0])
            dev_flops = flops_per_sec / self.world_size
            if add_global:
                metrics["flops_per_sec"] = flops_per_sec
            metrics[f"device{sep}flops_per_sec"] = dev_flops
            if self.available_flops:
                metrics[f"device{sep}mfu"] = dev_flops / self.available_flops
        return metrics

    def reset(self) -> None:
        for window in (self._time, self._batches, self._samples, self._lengths, self._flops):
            window.clear()


class ThroughputMonitor(Throughput):
    """``Throughput`` for a ``fulmen.Lite`` run: the peak FLOPs of the Lite's device and
    precision, its world size, and ``compute_and_log`` to the Lite's loggers. Updates and logs
    on global rank zero only. Use it inside ``launch``/``run`` (or a one-process Lite).

    Example::

        throughput = ThroughputMonitor(lite, window_size=10)
        t0 = time.perf_counter()
        for i in range(1, 100):
            train_step()
            throughput.update(time=time.perf_counter() - t0, batches=i, samples=i * 32)
            if i % 10 == 0:
                throughput.compute_and_log(step=i)
    """

    def __init__(self, lite: Lite, **kwargs: Any) -> None:
        dtype = compute_dtype(lite.strategy.precision)
        available = lite.accelerator.get_available_flops(lite.device, dtype)
        super().__init__(available_flops=available, world_size=lite.world_size, **kwargs)
        self.lite = lite
        self.step = -1
        self.update = rank_zero_only(self.update)  # type: ignore[method-assign]
        self.compute = rank_zero_only(self.compute, default={})  # type: ignore[method-assign]
        self.compute_and_log = rank_zero_only(  # type: ignore[method-assign]
            self.compute_and_log, default={})
        self.reset = rank_zero_only(self.reset)  # type: ignore[method-assign]

    def compute_and_log(self, step: int | None = None) -> ThroughputMetrics:
        """``compute()`` and ``lite.log_dict`` it at ``step`` (default: one more than last)."""
        self.step = (self.step + 1) if step is None else step
        metrics = self.compute()
        self.lite.log_dict(metrics, step=self.step)
        return metrics


def measure_flops(model: torch.nn.Module, forward_fn: Callable[[], torch.Tensor],
                  loss_fn: Callable[[torch.Tensor], torch.Tensor] | None = None) -> int:
    """FLOPs of one ``forward_fn()`` (and, with ``loss_fn``, of the loss and backward), counted
    by ``torch.utils.flop_counter``. Build the model and inputs on the ``meta`` device to count
    without computing::

        with torch.device("meta"):
            model = MyModel()
            x = torch.randn(2, 32)
        fwd_and_bwd = measure_flops(model, lambda: model(x), lambda y: y.sum())
    """
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        if loss_fn is None:
            forward_fn()
        else:
            loss_fn(forward_fn()).backward()
    return int(counter.get_total_flops())


def get_available_flops(device: torch.device, dtype: torch.dtype | str,
                        accelerator: type[Accelerator] | Accelerator | None = None) -> int | None:
    """Theoretical peak FLOPs/s of one ``device`` in ``dtype`` (an optimistic upper bound,
    reached only by large matmuls), from the accelerator plugin that drives ``device.type``
    (its ``get_available_flops``); None when unknown, e.g. on the CPU."""
    if accelerator is None:
        from fulmen.kernel.manager import get_plugin_manager

        entry = get_plugin_manager().catalog().find("accelerator", device.type)
        if entry is None:
            return None
        accelerator = entry.record.load()
    return accelerator.get_available_flops(device, dtype)


def compute_dtype(precision: Precision) -> torch.dtype:
    """The dtype the forward math of ``precision`` runs in (what MFU is measured against)."""
    return precision.compute_dtype or precision.param_dtype or torch.float32


T = TypeVar("T", bound=float)


class MonotonicWindow(list[T]):
    """A list of at most ``maxlen`` values that only grows to the right with increasing values."""

    def __init__(self, maxlen: int) -> None:
        super().__init__()
        self.maxlen = maxlen

    @property
    def last(self) -> T | None:
        return self[-1] if self else None

    def append(self, x: T) -> None:
        last = self.last
        if last is not None and last >= x:
            raise ValueError(f"Expected the value to increase, last: {last}, current: {x}")
        list.append(self, x)
        if len(self) > self.maxlen:
            del self[0]

    def __setitem__(self, key: Any, value: Any) -> None:
        raise NotImplementedError("__setitem__ is not supported")
