"""The Trainer's read-only members Lightning users know: what is running, what was logged, the
callbacks of each kind, where logs go. A base class of :class:`~fulmen.trainer.trainer.Trainer`,
read through the Trainer's public state only."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from fulmen.kernel.selection import SelectionReport
from fulmen.status import configure_logging
from fulmen.trainer.states import RunningStage, TrainerStatus

if TYPE_CHECKING:
    from fulmen.api.logger import Logger
    from fulmen.datamodule import DataModule
    from fulmen.loggers.dispatch import LoggerSet
    from fulmen.module import Module
    from fulmen.trainer.metrics import Metrics
    from fulmen.trainer.optim import LRSchedulerConfig
    from fulmen.trainer.optimization import Optimization
    from fulmen.trainer.progress import RunState
    from fulmen.trainer.states import TrainerState


class TrainerProperties(SelectionReport):
    """Lightning's Trainer properties, computed from the Trainer's state."""

    module: Module | None
    datamodule: DataModule | None
    logger_set: LoggerSet
    callbacks: list[Any]
    state: TrainerState
    global_step: int
    should_stop: bool
    log_every_n_steps: int
    barebones: bool
    reload_dataloaders_every_n_epochs: int
    max_epochs: int
    max_steps: int
    accumulate_grad_batches: int
    num_training_batches: int | float
    fit_loop: Any  # fulmen.trainer.fit_loop.FitLoop (not imported: it names the Trainer)
    optimization: Optimization
    metrics: Metrics
    run_state: RunState
    _default_root_dir: str

    @property
    def precision(self) -> str:
        """The canonical name of the precision in use (``"32-true"``, ``"bf16-mixed"``...)."""
        return self._selection.precision.name

    @property
    def lightning_module(self) -> Module | None:
        """The module being run (the name Lightning users know)."""
        return self.module

    @property
    def model(self) -> torch.nn.Module | None:
        """What steps run through: the module as the strategy wrapped it (DDP...)."""
        model = self.strategy.model
        return model if model is not None else self.module

    @property
    def loggers(self) -> list[Logger]:
        """The loggers (Lightning's); assigning a list replaces them."""
        return self.logger_set.loggers

    @loggers.setter
    def loggers(self, loggers: list[Logger]) -> None:
        self.logger_set.loggers = list(loggers)

    @property
    def logger(self) -> Any:
        return self.loggers[0] if self.loggers else None

    @logger.setter
    def logger(self, logger: Logger | None) -> None:
        self.loggers = [] if logger is None else [logger]

    @property
    def default_root_dir(self) -> str:
        return str(self._default_root_dir)

    @property
    def log_dir(self) -> str:
        if self.logger is not None and getattr(self.logger, "log_dir", None):
            return str(self.logger.log_dir)
        return str(self._default_root_dir)

    @property
    def checkpoint_callback(self) -> Any:
        from fulmen.callbacks import ModelCheckpoint

        return next((c for c in self.callbacks if isinstance(c, ModelCheckpoint)), None)

    @property
    def checkpoint_callbacks(self) -> list[Any]:
        from fulmen.callbacks import ModelCheckpoint

        return [c for c in self.callbacks if isinstance(c, ModelCheckpoint)]

    @property
    def early_stopping_callbacks(self) -> list[Any]:
        from fulmen.callbacks import EarlyStopping

        return [c for c in self.callbacks if isinstance(c, EarlyStopping)]

    @property
    def early_stopping_callback(self) -> Any:
        from fulmen.callbacks import EarlyStopping

        return next((c for c in self.callbacks if isinstance(c, EarlyStopping)), None)

    @property
    def progress_bar_callback(self) -> Any:
        from fulmen.callbacks.progress import ProgressBar

        return next((c for c in self.callbacks if isinstance(c, ProgressBar)), None)

    # Lightning's state properties: each reads ``state.stage``; setting one True enters its
    # stage, setting it False leaves it (stage None) only when it is the running one.

    @property
    def interrupted(self) -> bool:
        """The last fit/validate/test/predict was interrupted (an exception, Ctrl-C)."""
        return self.state.status == TrainerStatus.INTERRUPTED

    @property
    def training(self) -> bool:
        """The training loop runs (inside fit; not its sanity check or validation)."""
        return self.state.stage == RunningStage.TRAINING

    @training.setter
    def training(self, val: bool) -> None:
        self._set_stage(RunningStage.TRAINING, val)

    @property
    def validating(self) -> bool:
        """A validation loop runs: ``trainer.validate``, or validation inside fit."""
        return self.state.stage == RunningStage.VALIDATING

    @validating.setter
    def validating(self, val: bool) -> None:
        self._set_stage(RunningStage.VALIDATING, val)

    @property
    def testing(self) -> bool:
        return self.state.stage == RunningStage.TESTING

    @testing.setter
    def testing(self, val: bool) -> None:
        self._set_stage(RunningStage.TESTING, val)

    @property
    def predicting(self) -> bool:
        return self.state.stage == RunningStage.PREDICTING

    @predicting.setter
    def predicting(self, val: bool) -> None:
        self._set_stage(RunningStage.PREDICTING, val)

    @property
    def sanity_checking(self) -> bool:
        """The sanity check runs (the few validation batches before fit trains)."""
        return self.state.stage == RunningStage.SANITY_CHECKING

    @sanity_checking.setter
    def sanity_checking(self, val: bool) -> None:
        self._set_stage(RunningStage.SANITY_CHECKING, val)

    @property
    def evaluating(self) -> bool:
        """The sanity check, a validation or a test runs."""
        return self.state.stage is not None and self.state.stage.evaluating

    def _set_stage(self, stage: RunningStage, val: bool) -> None:
        if val:
            self.state.stage = stage
        elif self.state.stage == stage:
            self.state.stage = None

    @property
    def lr_scheduler_configs(self) -> list[LRSchedulerConfig]:
        """The schedulers of the running fit and when they step: the live list, as in
        Lightning, so a callback may replace or append one (``StochasticWeightAveraging``
        swaps in its ``SWALR``). The loop reads it at every epoch start."""
        return self.optimization.lr_scheduler_configs

    @property
    def optimizers(self) -> list[Any]:
        """The optimizers of the running fit, as the strategy set them up."""
        return self.optimization.optimizers

    @optimizers.setter
    def optimizers(self, optimizers: list[Any]) -> None:
        self.optimization.optimizers = list(optimizers)

    @property
    def batch_stepped(self) -> bool:
        """Whether the current training batch ran an optimizer step (it ended an accumulation
        window), read in ``on_train_batch_end``; False in the batches that only accumulate."""
        return self.global_step != self.run_state.steps_before_batch

    @property
    def callback_metrics(self) -> dict[str, torch.Tensor]:
        """Latest value of everything logged: step values during an epoch, then epoch values.
        Values a callback writes here (``trainer.callback_metrics.update(...)``, as Lightning's
        callbacks do) are kept, for ``ModelCheckpoint``/``EarlyStopping`` to monitor."""
        return self.metrics.callback_metrics()

    @property
    def estimated_stepping_batches(self) -> int | float:
        """How many optimizer steps the fit will take (Lightning's estimate, for schedulers such
        as ``OneCycleLR(total_steps=...)`` built in ``configure_optimizers``): the epoch's
        batches over ``accumulate_grad_batches``, rounded up, times ``max_epochs``, at most
        ``max_steps``. The training dataloader is requested now if the fit has not yet."""
        if self.max_epochs == -1:
            return math.inf if self.max_steps == -1 else self.max_steps
        if self.run_state.fit_data is None or self.run_state.fit_data.train is None:
            configure_logging().info(
                "Loading `train_dataloader` to estimate number of stepping batches.")
            self.fit_loop.training_data()
        total = self.num_training_batches
        if total == math.inf:
            return self.max_steps
        steps = math.ceil(total / self.accumulate_grad_batches) * max(self.max_epochs, 1)
        return min(steps, self.max_steps) if self.max_steps != -1 else steps

    def _dataloaders(self, kind: str) -> Any:
        loaders = self.run_state.dataloaders.get(kind)
        if not loaders:
            return None
        return loaders[0] if len(loaders) == 1 else loaders

    @property
    def train_dataloader(self) -> Any:
        """The training dataloader the fit runs (as the strategy prepared it), None before."""
        return self._dataloaders("train")

    @property
    def val_dataloaders(self) -> Any:
        """The validation dataloader(s) last run (a list when there are several), or None."""
        return self._dataloaders("val")

    @property
    def test_dataloaders(self) -> Any:
        """The test dataloader(s) last run (a list when there are several), or None."""
        return self._dataloaders("test")

    @property
    def predict_dataloaders(self) -> Any:
        """The predict dataloader(s) last run (a list when there are several), or None."""
        return self._dataloaders("predict")

    @property
    def should_update_logs(self) -> bool:
        """Whether callbacks that log (``LearningRateMonitor``, ``ThroughputMonitor``,
        ``DeviceStatsMonitor``) log at the current batch: it is the n-th batch that steps, n a
        multiple of ``log_every_n_steps`` (the same answer from ``on_train_batch_start`` to
        ``on_train_batch_end``), or training is stopping — Lightning's rule, which counts
        batches (not optimizer steps) under manual optimization too."""
        if not self.log_every_n_steps:  # 0: step metrics are not logged (Lightning)
            return False
        return ((self.run_state.progress.batches_that_stepped + 1) % self.log_every_n_steps == 0
                or self.should_stop)

    @property
    def logged_metrics(self) -> dict[str, Any]:
        """The latest value of everything logged with ``logger=True`` (tensors, by Lightning's
        ``_step``/``_epoch`` names), whether or not a logger is configured."""
        return self.metrics.logged_metrics()

    @property
    def progress_bar_metrics(self) -> dict[str, float]:
        """Values logged with ``prog_bar=True``, as floats."""
        return self.metrics.progress_bar_metrics()

    @property
    def dataloaders_from_module(self) -> bool:
        """True when the running stage takes its data from the module's or datamodule's
        ``*_dataloader()`` methods (no dataloaders were passed to fit/validate/test/predict), so
        a changed batch size takes effect when the data is set up again."""
        return all(v is None for v in self.run_state.stage_loaders.values())

    def log_to_loggers(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Send ``metrics`` (name -> number or scalar tensor) to every logger, from rank zero,
        and record them in ``logged_metrics``: what a callback uses to log values it computes
        itself (``ThroughputMonitor``). ``step`` None: on the training step axis
        (``batches_that_stepped``), with ``epoch`` added (Lightning's rule); an explicit step
        (evaluation values logged per batch) gets no ``epoch``."""
        self.metrics.log_to_loggers(metrics, step)

    @property
    def batches_that_stepped(self) -> int:
        """The loggers' step axis (Lightning's ``_batches_that_stepped``): training batches
        that ended an accumulation window (under manual optimization: every batch). Values
        logged in a training step go to the loggers at the count *before* that batch."""
        return self.run_state.progress.batches_that_stepped
