"""``ThroughputMonitor``: samples/s, items (tokens)/s, FLOPs/s and MFU per stage, to the
loggers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from fulmen.callbacks.base import Callback
from fulmen.utilities.rank_zero import rank_zero_warn
from fulmen.utilities.throughput import Throughput, compute_dtype


class ThroughputMonitor(Callback):
    """Logs ``Throughput`` metrics as ``<stage>/<metric>`` (``train/device/samples_per_sec``,
    ``validate/...``, ``test/...``, ``predict/...``) on global rank zero.

    ``batch_size_fn(batch)`` gives the samples of a batch, ``length_fn(batch)`` its items
    (tokens); FLOPs come from the module's ``flops_per_batch`` (set it with ``measure_flops``);
    MFU divides by the accelerator's peak (``Accelerator.get_available_flops``) for the
    precision's compute dtype. Training figures are logged when the step's metrics are
    (``trainer.should_update_logs``), after gradient accumulation, and exclude the time spent in
    validation. ``**kwargs`` go to ``Throughput`` (``window_size``, ``separator``...).

    On CUDA each update synchronises the device (or the time would be wrong): that is the cost
    of the measurement, paid only with this callback.
    """

    def __init__(self, batch_size_fn: Callable[[Any], int],
                 length_fn: Callable[[Any], int] | None = None, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.batch_size_fn = batch_size_fn
        self.length_fn = length_fn
        self.available_flops: int | None = None
        self._throughputs: dict[str, Throughput] = {}
        self._t0s: dict[str, float] = {}
        self._lengths: dict[str, int] = {}
        self._samples: dict[str, int] = {}
        self._batches: dict[str, int] = {}
        self._warned_flops = False
        self._world_size = 1

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        device = trainer.strategy.root_device
        dtype = compute_dtype(trainer.strategy.precision)
        self.available_flops = trainer.accelerator.get_available_flops(device, dtype)
        self._world_size = trainer.world_size
        self._throughputs.clear()

    def _start(self, trainer: Any, stage: str) -> None:
        if stage not in self._throughputs:  # created when the stage first runs
            self._throughputs[stage] = Throughput(available_flops=self.available_flops,
                                                  world_size=self._world_size, **self.kwargs)
        if trainer.state.fn == "fit" or stage not in self._samples:
            self._throughputs[stage].reset()
            self._lengths[stage] = self._samples[stage] = self._batches[stage] = 0
        self._t0s[stage] = time.perf_counter()

    @torch.inference_mode()  # batch_size_fn / length_fn might compute on tensors
    def _update(self, trainer: Any, module: Any, batch: Any, stage: str) -> None:
        if trainer.strategy.root_device.type == "cuda":
            torch.cuda.synchronize()  # or perf_counter() measures the launch, not the work
        elapsed = time.perf_counter() - self._t0s[stage]
        if self.length_fn is not None:
            self._lengths[stage] += self.length_fn(batch)
        flops = module.flops_per_batch
        if flops is None and not self._warned_flops:
            self._warned_flops = True
            rank_zero_warn("When using the `ThroughputMonitor`, you need to define a "
                           f"`flops_per_batch` attribute or property in {type(module).__name__}"
                           " to compute the FLOPs.")
        self._samples[stage] += self.batch_size_fn(batch)
        self._batches[stage] += 1
        self._throughputs[stage].update(
            time=elapsed, batches=self._batches[stage], samples=self._samples[stage],
            lengths=None if self.length_fn is None else self._lengths[stage], flops=flops)

    def _compute(self, trainer: Any, stage: str, step: int | None = None) -> None:
        if not trainer.should_update_logs:
            return
        throughput = self._throughputs[stage]
        metrics = {f"{stage}{throughput.separator}{k}": v for k, v in throughput.compute().items()}
        # training: the loggers' step axis with ``epoch`` (step None), as Lightning
        trainer.log_to_loggers(metrics, step)

    def on_train_start(self, trainer: Any, module: Any) -> None:
        if trainer.is_global_zero:
            self._start(trainer, "train")

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if not trainer.is_global_zero:
            return
        self._update(trainer, module, batch, "train")
        # only once the effective batch is done, so the optimizer step's time is included
        if trainer.batch_stepped or not module.automatic_optimization:
            self._compute(trainer, "train")

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        if trainer.is_global_zero and not trainer.sanity_checking:
            self._start(trainer, "validate")

    def on_validation_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        if trainer.is_global_zero and not trainer.sanity_checking:
            self._update(trainer, module, batch, "validate")
            self._compute(trainer, "validate", self._batches["validate"])

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if not trainer.is_global_zero or trainer.sanity_checking or trainer.state.fn != "fit":
            return
        # move the training clock past the validation run, so it does not sink training's rate
        train_elapsed = self._throughputs["train"].elapsed_time
        val_elapsed = self._throughputs["validate"].elapsed_time
        training_finished = self._t0s["train"] + train_elapsed
        self._t0s["train"] += (self._t0s["validate"] - training_finished) + val_elapsed

    def on_test_start(self, trainer: Any, module: Any) -> None:
        if trainer.is_global_zero:
            self._start(trainer, "test")

    def on_test_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        if trainer.is_global_zero:
            self._update(trainer, module, batch, "test")
            self._compute(trainer, "test", self._batches["test"])

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        if trainer.is_global_zero:
            self._start(trainer, "predict")

    def on_predict_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                             batch_idx: int, dataloader_idx: int = 0) -> None:
        if trainer.is_global_zero:
            self._update(trainer, module, batch, "predict")
            self._compute(trainer, "predict", self._batches["predict"])
