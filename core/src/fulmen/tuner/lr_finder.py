"""The learning-rate range test (Smith, 2015), as Lightning's ``lr_find``: train a few steps
with the learning rate growing from ``min_lr`` to ``max_lr`` and suggest where the loss falls
fastest. Runs as a trial inside fit (``Trainer.run_trial``): nothing it does stays."""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.tuner import attributes
from fulmen.utilities.rank_zero import rank_zero_warn

log = logging.getLogger("fulmen")
MODES = ("linear", "exponential")


def determine_lr_attr_name(module: Any, datamodule: Any, attr_name: str = "") -> str:
    """The attribute holding the learning rate: ``attr_name``, else ``lr`` or ``learning_rate``."""
    if attr_name:
        if not attributes.has(module, datamodule, attr_name):
            raise ConfigurationError(
                f"The attribute name for the learning rate was set to {attr_name!r}, but could "
                "not find this as a field in `model` or `model.hparams`")
        return attr_name
    for attr in ("lr", "learning_rate"):
        if attributes.has(module, datamodule, attr):
            return attr
    raise ConfigurationError(
        "When using the learning rate finder, either `model` or `model.hparams` should have one "
        "of these fields: ('lr', 'learning_rate'). If your model has a different name for the "
        "learning rate, set it with `.lr_find(attr_name=...)`")


class LRFinder:
    """The results of ``lr_find``: ``results["lr"]`` and ``results["loss"]`` (smoothed), one
    pair per step; ``suggestion()``; ``plot()`` (needs matplotlib)."""

    def __init__(self, mode: str, lr_min: float, lr_max: float, num_training: int) -> None:
        self.mode, self.lr_min, self.lr_max = mode, lr_min, lr_max
        self.num_training = num_training
        self.results: dict[str, Any] = {}
        self._optimal_idx: int | None = None

    def plot(self, suggest: bool = False, show: bool = False, ax: Any = None) -> Any:
        """Loss against learning rate (log scale in exponential mode); ``suggest`` marks the
        suggestion in red."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ConfigurationError("To use the `plot` method, you must have Matplotlib "
                                     "installed: pip install -U matplotlib") from None
        lrs, losses = self.results["lr"], self.results["loss"]
        fig = None
        if ax is None:
            fig, ax = plt.subplots()
        else:
            fig = ax.figure
        ax.plot(lrs, losses)
        if self.mode == "exponential":
            ax.set_xscale("log")
        ax.set_xlabel("Learning rate")
        ax.set_ylabel("Loss")
        if suggest and self.suggestion() is not None and self._optimal_idx is not None:
            ax.plot(lrs[self._optimal_idx], losses[self._optimal_idx], markersize=10, marker="o",
                    color="red")
        if show:
            plt.show()
        return fig

    def suggestion(self, skip_begin: int = 10, skip_end: int = 1) -> float | None:
        """The learning rate where the loss falls fastest (steepest negative gradient), leaving
        out ``skip_begin`` first and ``skip_end`` last points; None with fewer than 2 points."""
        losses = torch.tensor(self.results["loss"][skip_begin:-skip_end])
        lrs = torch.tensor(self.results["lr"][skip_begin:-skip_end])
        is_finite = torch.isfinite(losses)
        losses, lrs = losses[is_finite], lrs[is_finite]
        if len(losses) < 2:
            log.error("Failed to compute suggestion for learning rate because there are not "
                      "enough points. Increase the loop iteration limits or the size of your "
                      "dataset/dataloader.")
            self._optimal_idx = None
            return None
        gradients = torch.gradient(losses, spacing=[lrs])[0]
        min_grad = int(torch.argmin(gradients).item())
        idx_non_skipped = torch.arange(len(self.results["loss"]))[skip_begin:-skip_end]
        self._optimal_idx = int(idx_non_skipped[is_finite][min_grad].item())
        return float(self.results["lr"][self._optimal_idx])


def lr_find(trainer: Any, model: Any, min_lr: float = 1e-8, max_lr: float = 1,
            num_training: int = 100, mode: str = "exponential",
            early_stop_threshold: float | None = 4.0, update_attr: bool = False,
            attr_name: str = "") -> LRFinder | None:
    """Run the range test now (inside fit, e.g. from ``on_fit_start``); returns the results."""
    from fulmen.trainer.optim import LRSchedulerConfig

    check_arguments(min_lr, max_lr, num_training, mode, early_stop_threshold)
    if trainer.fast_dev_run:
        rank_zero_warn("Skipping learning rate finder since `fast_dev_run` is enabled.")
        return None
    if update_attr:
        attr_name = determine_lr_attr_name(model, trainer.datamodule, attr_name)
    if len(trainer.optimizers) != 1:
        raise ConfigurationError(f"`model.configure_optimizers()` returned "
                                 f"{len(trainer.optimizers)} optimizers, but the learning rate "
                                 "finder only works with a single optimizer")
    optimizer = trainer.optimizers[0]
    finder = LRFinder(mode, min_lr, max_lr, num_training)
    callback = LRCallback(num_training, early_stop_threshold)

    def prepare() -> None:
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"] = min_lr
        kind = LinearLR if mode == "linear" else ExponentialLR
        callback.scheduler = kind(optimizer, max_lr, num_training)
        trainer.lr_scheduler_configs[:] = [LRSchedulerConfig(callback.scheduler,
                                                             interval="step")]

    trainer.run_trial(num_training, [callback], prepare=prepare)
    if callback.steps != num_training:
        log.info("LR finder stopped early after %d steps due to diverging loss.", callback.steps)
    finder.results = trainer.strategy.broadcast({"lr": callback.lrs, "loss": callback.losses})
    if update_attr:
        lr = finder.suggestion()
        if lr is not None:
            attributes.set_(model, trainer.datamodule, attr_name, lr)
            for opt in trainer.optimizers:
                for group in opt.param_groups:
                    group["lr"] = lr
            log.info("Learning rate set to %s", lr)
    return finder


def check_arguments(min_lr: Any, max_lr: Any, num_training: Any, mode: Any,
                    early_stop_threshold: Any) -> None:
    given = (f"(min_lr={min_lr!r}, max_lr={max_lr!r}, num_training={num_training!r}, "
             f"mode={mode!r}, early_stop_threshold={early_stop_threshold!r})")
    if mode not in MODES:
        raise ConfigurationError(f"lr finder{given}: `mode` should be either of {MODES}")
    numbers = (min_lr, max_lr)
    if any(isinstance(v, bool) or not isinstance(v, int | float) or v <= 0 for v in numbers):
        raise ConfigurationError(f"lr finder{given}: learning rates must be numbers > 0")
    if isinstance(num_training, bool) or not isinstance(num_training, int) or num_training < 1:
        raise ConfigurationError(f"lr finder{given}: num_training must be an int >= 1")


class LRCallback(Callback):
    """Records the learning rate before and the smoothed loss after each optimizer step, and
    stops the trial when the loss exceeds ``early_stop_threshold`` x the best loss."""

    def __init__(self, num_training: int, early_stop_threshold: float | None = 4.0,
                 beta: float = 0.98) -> None:
        self.num_training = num_training
        self.early_stop_threshold = early_stop_threshold
        self.beta = beta
        self.losses: list[float] = []
        self.lrs: list[float] = []
        self.avg_loss = 0.0
        self.best_loss = 0.0
        self.steps = 0
        self.start_step = 0
        self.scheduler: Any = None

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self.start_step = trainer.global_step

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any,
                             batch_idx: int) -> None:
        if (batch_idx + 1) % trainer.accumulate_grad_batches != 0:
            return
        self.lrs.append(self.scheduler.lr[0])

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if (batch_idx + 1) % trainer.accumulate_grad_batches != 0:
            return
        if outputs is None or (isinstance(outputs, dict) and outputs.get("loss") is None):
            self.losses.append(float("nan"))  # a skipped step: left out of the suggestion
            return
        loss = outputs if isinstance(outputs, torch.Tensor) else outputs["loss"]
        current_loss = float(loss.item())
        current_step = trainer.global_step - self.start_step
        self.steps = current_step
        self.avg_loss = self.beta * self.avg_loss + (1 - self.beta) * current_loss
        smoothed_loss = self.avg_loss / (1 - self.beta ** (current_step + 1))
        if (self.early_stop_threshold is not None and current_step > 1
                and smoothed_loss > self.early_stop_threshold * self.best_loss):
            trainer.should_stop = True
        trainer.should_stop = trainer.strategy.broadcast(trainer.should_stop)
        if smoothed_loss < self.best_loss or current_step == 1:
            self.best_loss = smoothed_loss
        self.losses.append(smoothed_loss)


class _RangeLR(LRScheduler):
    """Raises the learning rate from the groups' initial lr to ``end_lr`` over ``num_iter``
    steps; subclasses say how (``_at``)."""

    def __init__(self, optimizer: torch.optim.Optimizer, end_lr: float, num_iter: int,
                 last_epoch: int = -1) -> None:
        self.end_lr, self.num_iter = end_lr, num_iter
        super().__init__(optimizer, last_epoch)

    def _at(self, base: Any, r: float) -> Any:
        raise NotImplementedError

    def get_lr(self) -> list[Any]:
        r = (self.last_epoch + 1) / self.num_iter
        val = [self._at(base, r) for base in self.base_lrs] if self.last_epoch > 0 \
            else list(self.base_lrs)
        self._lr = val
        return val

    @property
    def lr(self) -> list[Any]:
        return self._lr


class LinearLR(_RangeLR):
    """Linearly from the initial lr to ``end_lr``."""

    def _at(self, base: Any, r: float) -> Any:
        return base + r * (self.end_lr - base)


class ExponentialLR(_RangeLR):
    """Exponentially from the initial lr to ``end_lr``."""

    def _at(self, base: Any, r: float) -> Any:
        return base * (self.end_lr / base) ** r
