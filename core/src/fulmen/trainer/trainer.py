"""``Trainer``: composes the plugins at construction, then runs fit/validate/test/predict."""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch

from fulmen import arguments, compiling, hang, profilers, quick_exit
from fulmen.api import RunConfig
from fulmen.api.logger import FAILED, INTERRUPTED, SUCCESS, Logger
from fulmen.callbacks.base import Callback
from fulmen.datamodule import DataModule
from fulmen.errors import ConfigurationError, FulmenError, StageExit
from fulmen.hang import HangDoctor
from fulmen.kernel.connector import SelectionReport, select
from fulmen.kernel.legacy import translate_flag
from fulmen.module import Module
from fulmen.status import banner, configure_logging
from fulmen.trainer import config, data, loops, save_restore
from fulmen.trainer.hooks import HookTable
from fulmen.trainer.legacy_hooks import refuse_legacy_hooks
from fulmen.trainer.metrics import Metrics
from fulmen.trainer.optim import LRSchedulerConfig
from fulmen.trainer.optimization import Optimization
from fulmen.trainer.preemption import Preempted, Preemption
from fulmen.trainer.progress import RunState
from fulmen.utilities.rank_zero import current_rank, rank_zero_warn, set_rank


class Trainer(SelectionReport):
    """Runs a ``fulmen.Module`` on whatever the selection arguments name.

    ``accelerator``, ``strategy``, ``precision``: ``"auto"`` (not precision), a registered name
    or alias, or an instance. ``devices``: see the accelerator's parsing (``2``, ``[0, 1]``,
    ``"1, 3"``, ``-1``, ``"auto"``). ``plugins``: ``ClusterEnvironment``/``Precision``/
    ``CheckpointIO`` instances or environment/precision names. Legacy ``gpus=``, ``tpu_cores=``,
    ``replace_sampler_ddp=``, ``accelerator="ddp"`` and ``precision=16`` are accepted with a
    ``FulmenDeprecationWarning`` that shows the current spelling.

    Args:
        accelerator: ``"auto"``, a registered accelerator name (``fulmen plugins``) or an
            Accelerator instance.
        strategy: ``"auto"``, a registered strategy name or a Strategy instance.
        devices: how many devices (or processes on the CPU) per node: an int, ``-1`` for all,
            a list of indices, ``"1, 3"``, or ``"auto"``.
        num_nodes: how many machines the run spans.
        precision: a registered precision name or alias (``"32-true"``, ``"bf16-mixed"``...) or
            a Precision instance.
        plugins: ClusterEnvironment, Precision or CheckpointIO instances, or registered
            environment/precision names.
        logger: True (TensorBoard or CSV logger in default_root_dir), False, or loggers.
        callbacks: Callback instances to add to the defaults.
        max_epochs: stop after this many epochs (None: 1000 unless max_steps is set; -1: none).
        min_epochs: train at least this many epochs, even when asked to stop earlier.
        max_steps: stop after this many optimizer steps (-1: no limit).
        min_steps: train at least this many optimizer steps.
        max_time: stop after this long: ``"DD:HH:MM:SS"``, a timedelta or ``{"hours": 2}``.
        limit_train_batches: batches per training epoch: an int count or a float fraction.
        limit_val_batches: batches per validation run: an int count or a float fraction.
        limit_test_batches: batches per test run: an int count or a float fraction.
        limit_predict_batches: batches per predict run: an int count or a float fraction.
        overfit_batches: train and validate on this many (or this fraction of) training batches,
            unshuffled.
        val_check_interval: validate every this many training batches (int) or this fraction of
            an epoch (float).
        check_val_every_n_epoch: validate every this many epochs (None: by val_check_interval
            only).
        num_sanity_val_steps: validation batches run before training (-1: all, 0: none).
        fast_dev_run: run this many batches (True: 1) of every stage once, as a smoke test.
        accumulate_grad_batches: sum gradients over this many batches per optimizer step.
        gradient_clip_val: clip gradients to this norm or value (None or 0: no clipping).
        gradient_clip_algorithm: ``"norm"`` (default) or ``"value"``.
        deterministic: use deterministic algorithms (True, False, or ``"warn"``).
        benchmark: set ``torch.backends.cudnn.benchmark`` (None: leave it).
        detect_anomaly: torch's autograd anomaly detection, and stop every rank at the first
            non-finite training loss (a ``fulmen.errors.NonFiniteError``).
        profiler: ``"simple"``, ``"advanced"``, ``"pytorch"`` or a Profiler instance.
        compile: torch.compile the model and its step methods (as Lightning does for a model
            given as ``torch.compile(model)``): True, or a dict of torch.compile arguments.
        log_every_n_steps: how often (in optimizer steps) step metrics are logged and training
            losses are checked for NaN/inf.
        enable_checkpointing: add a ModelCheckpoint when none is given.
        enable_progress_bar: show a progress bar.
        enable_model_summary: log a summary of the model when fit starts.
        default_root_dir: where logs and checkpoints go (default: the working directory).
        use_distributed_sampler: wrap dataloaders in a DistributedSampler when distributed.
        sync_batchnorm: convert BatchNorm layers to SyncBatchNorm.
        inference_mode: evaluate under ``torch.inference_mode`` (False: ``torch.no_grad``).
        barebones: not implemented in fulmen (refused with the alternative).
        reload_dataloaders_every_n_epochs: not implemented in fulmen (refused with the
            alternative).
        enable_autolog_hparams: log the module's and datamodule's hyper-parameters.
        model_registry: not implemented in fulmen (refused with the alternative).
        suggest_integrations: accepted for Lightning compatibility; fulmen prints no
            suggestions.
        gpus: legacy spelling of ``accelerator="gpu", devices=gpus``.
        tpu_cores: legacy spelling of ``accelerator="tpu", devices=tpu_cores``.
        replace_sampler_ddp: legacy spelling of ``use_distributed_sampler``.
    """

    @arguments.suggest_unknown_keywords("Trainer")
    def __init__(
        self,
        *,
        accelerator: Any = "auto",
        strategy: Any = "auto",
        devices: Any = "auto",
        num_nodes: int = 1,
        precision: Any = "32-true",
        plugins: Sequence[Any] | Any | None = None,
        logger: Any = True,
        callbacks: Sequence[Callback] | Callback | None = None,
        max_epochs: int | None = None,
        min_epochs: int | None = None,
        max_steps: int = -1,
        min_steps: int | None = None,
        max_time: str | timedelta | dict[str, int] | None = None,
        limit_train_batches: int | float | None = None,
        limit_val_batches: int | float | None = None,
        limit_test_batches: int | float | None = None,
        limit_predict_batches: int | float | None = None,
        overfit_batches: int | float = 0.0,
        val_check_interval: int | float | None = None,
        check_val_every_n_epoch: int | None = 1,
        num_sanity_val_steps: int = 2,
        fast_dev_run: int | bool = False,
        accumulate_grad_batches: int = 1,
        gradient_clip_val: int | float | None = None,
        gradient_clip_algorithm: str | None = None,
        deterministic: bool | str | None = None,
        benchmark: bool | None = None,
        detect_anomaly: bool = False,
        profiler: Any = None,
        compile: bool | dict[str, Any] | None = None,
        log_every_n_steps: int = 50,
        enable_checkpointing: bool = True,
        enable_progress_bar: bool = True,
        enable_model_summary: bool = True,
        default_root_dir: str | Path | None = None,
        use_distributed_sampler: bool = True,
        sync_batchnorm: bool = False,
        inference_mode: bool = True,
        barebones: bool = False,
        reload_dataloaders_every_n_epochs: int = 0,
        enable_autolog_hparams: bool = True,
        model_registry: str | None = None,
        suggest_integrations: bool = True,
        gpus: Any = None,
        tpu_cores: Any = None,
        replace_sampler_ddp: bool | None = None,
    ) -> None:
        arguments.check_selection("Trainer", accelerator=accelerator, strategy=strategy,
                                  devices=devices)
        arguments.check_bool("Trainer", {
            "benchmark": benchmark, "deterministic": deterministic, "detect_anomaly":
            detect_anomaly, "sync_batchnorm": sync_batchnorm, "enable_checkpointing":
            enable_checkpointing, "enable_progress_bar": enable_progress_bar,
            "enable_model_summary": enable_model_summary, "use_distributed_sampler":
            use_distributed_sampler, "inference_mode": inference_mode, "enable_autolog_hparams":
            enable_autolog_hparams, "suggest_integrations": suggest_integrations,
            "replace_sampler_ddp": replace_sampler_ddp},
            optional=("benchmark", "deterministic", "replace_sampler_ddp"),
            also={"deterministic": ("warn",)})
        arguments.check_number("Trainer", "gradient_clip_val", gradient_clip_val, minimum=0)
        arguments.check_number("Trainer", "val_check_interval", val_check_interval)
        arguments.check_path("Trainer", "default_root_dir", default_root_dir)
        arguments.check_epochs("Trainer", min_epochs, max_epochs)
        quick_exit.install()
        self._selection = select("Trainer", accelerator=accelerator, strategy=strategy,
                                 devices=devices, num_nodes=num_nodes, precision=precision,
                                 plugins=plugins, gpus=gpus, tpu_cores=tpu_cores)
        self.use_distributed_sampler = translate_flag(
            "Trainer", "replace_sampler_ddp", "use_distributed_sampler", replace_sampler_ddp,
            use_distributed_sampler, True)
        config.check_int("max_epochs", max_epochs, minimum=-1, optional=True)
        config.check_int("min_epochs", min_epochs, minimum=0, optional=True)
        config.check_int("max_steps", max_steps, minimum=-1)
        config.check_int("min_steps", min_steps, minimum=0, optional=True)
        config.refuse_unsupported(barebones=barebones,
                            reload_dataloaders_every_n_epochs=reload_dataloaders_every_n_epochs,
                            model_registry=model_registry)
        config.check_int("accumulate_grad_batches", accumulate_grad_batches, minimum=1)
        config.check_int("log_every_n_steps", log_every_n_steps, minimum=1)
        config.check_int("num_sanity_val_steps", num_sanity_val_steps, minimum=-1)
        config.check_int("check_val_every_n_epoch", check_val_every_n_epoch, minimum=1,
                         optional=True)
        config.check_clipping(gradient_clip_val, gradient_clip_algorithm)
        config.check_val_check_interval(val_check_interval)
        self.fast_dev_run = config.check_fast_dev_run(fast_dev_run)
        self.limit_train_batches = data.check_limit("limit_train_batches", limit_train_batches)
        self.limit_val_batches = data.check_limit("limit_val_batches", limit_val_batches)
        self.limit_test_batches = data.check_limit("limit_test_batches", limit_test_batches)
        self.limit_predict_batches = data.check_limit("limit_predict_batches",
                                                      limit_predict_batches)
        overfit = data.check_limit("overfit_batches", overfit_batches)
        self.overfit_batches = overfit or 0.0
        if self.overfit_batches:  # Lightning: that many train and val batches, no shuffling
            self.limit_train_batches = self.limit_val_batches = self.overfit_batches
        if self.fast_dev_run:
            n = self.fast_dev_run
            self.limit_train_batches = self.limit_val_batches = n
            self.limit_test_batches = self.limit_predict_batches = n
            max_epochs, max_steps, num_sanity_val_steps, val_check_interval = 1, n, 0, None
            logger, enable_checkpointing = False, False

        if max_epochs is None and max_steps == -1:
            max_epochs = 1000
        self.max_epochs = -1 if max_epochs is None else max_epochs
        self.min_epochs = min_epochs or 0
        self.max_steps = max_steps
        self.min_steps = min_steps or 0
        self.inference_mode = inference_mode
        self.enable_autolog_hparams = enable_autolog_hparams
        self.suggest_integrations = suggest_integrations  # fulmen prints no suggestions
        self.max_time = config.parse_max_time(max_time)
        self.val_check_interval = val_check_interval
        self.check_val_every_n_epoch = check_val_every_n_epoch
        self.num_sanity_val_steps = num_sanity_val_steps
        self.accumulate_grad_batches = accumulate_grad_batches
        self.gradient_clip_val = gradient_clip_val
        self.gradient_clip_algorithm = gradient_clip_algorithm
        self.deterministic, self.benchmark = deterministic, benchmark
        self.detect_anomaly = detect_anomaly
        self.profiler = profilers.resolve(profiler)
        self.compile_options = compiling.options("Trainer", compile)
        compiling.check_backend("Trainer", self.compile_options,
                                self._selection.accelerator.device_type)
        self._compiled: set[int] = set()  # modules compiled in place already
        self.log_every_n_steps = log_every_n_steps
        self.sync_batchnorm = sync_batchnorm
        self.enable_checkpointing = enable_checkpointing
        self._default_root_dir = config.root_dir(default_root_dir)
        self._configure_determinism()

        from fulmen.loggers import resolve_loggers
        from fulmen.loggers.dispatch import LoggerSet

        #: calls the loggers under the logger contract's rules (rank zero, one call per step,
        #: hyper-parameters once, failures isolated); ``loggers`` is its list
        self.logger_set = LoggerSet(resolve_loggers(logger, self._default_root_dir),
                                    rank=current_rank)
        self.callbacks: list[Callback] = config.default_callbacks(
            config.as_list(callbacks, Callback, "callbacks"), enable_checkpointing,
            enable_progress_bar, enable_model_summary)

        # run state
        self.module: Module | None = None
        self.datamodule: DataModule | None = None
        #: optimizers, schedulers and backward (``Module.optimizers()``, ``manual_backward``)
        self.optimization = Optimization(self)
        #: what ``self.log`` produced: callback, logged and progress-bar metrics
        self.metrics = Metrics(self)
        self.current_epoch = 0
        self.global_step = 0
        self.should_stop = False
        #: True: the training batches of the coming epoch run ``training_step`` only, under
        #: ``torch.no_grad`` (no zero_grad, backward, optimizer or scheduler step; global_step
        #: stays). Read at each epoch start; ``StochasticWeightAveraging`` sets it for the epoch
        #: that recomputes batch-norm statistics. Automatic optimization only.
        self.skip_backward = False
        self.state = "initializing"
        self.sanity_checking = False
        self.ckpt_path: str | None = None  # the checkpoint the last stage restored from
        self.num_training_batches: int | float = 0
        self.num_val_batches: list[int | float] = []
        self.num_sanity_val_batches: list[int | float] = []
        self.num_test_batches: list[int | float] = []
        self.num_predict_batches: list[int | float] = []
        #: the running stage's hooks: ``trainer.hooks(name, *args)`` calls the callbacks' and
        #: the module's ``name`` hook (None outside a stage)
        self.hooks: HookTable | None = None
        #: where the running stage is: progress counters and what the loops keep between calls
        self.run_state = RunState()

    # ------------------------------------------------------------------ reporting

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

    @property
    def training(self) -> bool:
        return self.state == "fit" and not self.sanity_checking

    @property
    def validating(self) -> bool:
        return self.state == "validate"

    @property
    def testing(self) -> bool:
        return self.state == "test"

    @property
    def predicting(self) -> bool:
        return self.state == "predict"

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
    def should_update_logs(self) -> bool:
        """Whether callbacks that log (``LearningRateMonitor``, ``ThroughputMonitor``,
        ``DeviceStatsMonitor``) log at the current batch: it is the n-th batch that steps, n a
        multiple of ``log_every_n_steps`` (the same answer from ``on_train_batch_start`` to
        ``on_train_batch_end``), or training is stopping — Lightning's rule, which counts
        batches (not optimizer steps) under manual optimization too."""
        return ((self.run_state.progress.batches_that_stepped + 1) % self.log_every_n_steps == 0
                or self.should_stop)

    @property
    def logged_metrics(self) -> dict[str, Any]:
        """What was last sent to the loggers."""
        return dict(self.metrics.logged)

    @property
    def progress_bar_metrics(self) -> dict[str, float]:
        """Values logged with ``prog_bar=True``, as floats."""
        return self.metrics.progress_bar_metrics()

    # ------------------------------------------------------------------ public API

    def fit(self, model: Module, train_dataloaders: Any = None, val_dataloaders: Any = None,
            datamodule: DataModule | None = None, ckpt_path: str | Path | None = None,
            weights_only: bool = True) -> None:
        """Train ``model``; validate along the way when validation data exists."""
        if isinstance(train_dataloaders, DataModule):
            datamodule, train_dataloaders = train_dataloaders, None
        model = self._check_call(model, datamodule, "fit", train_dataloaders, val_dataloaders)
        self.module, self.datamodule = model, datamodule
        self.strategy.launch(self._run, "fit", model, datamodule, ckpt_path, weights_only,
                             {"train": train_dataloaders, "val": val_dataloaders})

    def validate(self, model: Module | None = None, dataloaders: Any = None,
                 ckpt_path: str | Path | None = None, datamodule: DataModule | None = None,
                 verbose: bool = True, weights_only: bool = True) -> list[dict[str, float]]:
        """Run the validation loop once; returns one dict of metrics per dataloader."""
        return self._evaluate("validate", model, dataloaders, ckpt_path, datamodule, verbose,
                              weights_only)

    def test(self, model: Module | None = None, dataloaders: Any = None,
             ckpt_path: str | Path | None = None, datamodule: DataModule | None = None,
             verbose: bool = True, weights_only: bool = True) -> list[dict[str, float]]:
        """Run the test loop; returns one dict of metrics per dataloader."""
        return self._evaluate("test", model, dataloaders, ckpt_path, datamodule, verbose,
                              weights_only)

    def predict(self, model: Module | None = None, dataloaders: Any = None,
                datamodule: DataModule | None = None, ckpt_path: str | Path | None = None,
                return_predictions: bool = True, weights_only: bool = True) -> Any:
        """Run ``predict_step`` over the data; a list of outputs (one list per dataloader when
        there are several)."""
        if isinstance(dataloaders, DataModule):
            datamodule, dataloaders = dataloaders, None
        ckpt_path = save_restore.select(self, "predict", ckpt_path, model is not None)
        model = self._check_call(model or self.module, datamodule, "predict", dataloaders)
        self.module, self.datamodule = model, datamodule
        return self.strategy.launch(self._run, "predict", model, datamodule, ckpt_path,
                                    weights_only, {"predict": dataloaders},
                                    return_predictions)

    def save_checkpoint(self, filepath: str | Path, weights_only: bool = False) -> None:
        """Write a checkpoint of the running state (weights only: model and hyper-parameters)."""
        if self.module is None:
            raise FulmenError("save_checkpoint needs a model: call it during or after fit")
        checkpoint = save_restore.dump(self, weights_only)
        self.strategy.save_checkpoint(checkpoint, filepath)
        self.strategy.barrier("save_checkpoint")

    @property
    def dataloaders_from_module(self) -> bool:
        """True when the running stage takes its data from the module's or datamodule's
        ``*_dataloader()`` methods (no dataloaders were passed to fit/validate/test/predict), so
        a changed batch size takes effect when the data is set up again."""
        return all(v is None for v in self.run_state.stage_loaders.values())

    def run_trial(self, steps: int, callbacks: Sequence[Callback] = (),
                  prepare: Callable[[], None] | None = None) -> None:
        """Run a trial inside the running stage and put everything back: for tuners
        (``LearningRateFinder``, ``BatchSizeFinder``), called from ``on_<stage>_start``.

        Under fit: up to ``steps`` optimizer steps of the training loop (no validation, sanity
        check, ``on_fit_start``/``on_fit_end``); under validate/test/predict: ``steps`` batches
        of that loop. Only ``callbacks`` (and the module's hooks) run, nothing is logged, and the
        data is set up afresh from the module or datamodule. Afterwards the weights, optimizer
        and scheduler states, random state, counters, callbacks and loggers are as before, also
        when the trial raises (e.g. out of memory): the exception propagates. ``prepare`` runs
        after the state is saved, before the trial: change learning rates or
        ``lr_scheduler_configs`` there, and they are put back too.
        """
        from fulmen.seed import rng_states, set_rng_states

        if self.module is None or self.hooks is None or self.state not in loops.STAGE_LIMITS:
            raise FulmenError("trainer.run_trial runs inside a stage: call it from a callback "
                              "hook of fit/validate/test/predict (e.g. on_fit_start)")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigurationError(f"trainer.run_trial(steps={steps!r}): expected an int >= 1")
        saved_flags = {flag: getattr(self, flag) for flag in loops.STAGE_LIMITS[self.state]}
        run = self.run_state
        loaders = run.stage_loaders
        counters = (self.global_step, self.current_epoch, run.progress, self.should_stop,
                    self.num_training_batches, self.num_val_batches, run.restore,
                    run.loop_state)
        metrics = self.metrics.snapshot()
        state = {k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
                 for k, v in self.strategy.module_state_dict().items()}
        optimizer_states = [copy.deepcopy(self.strategy.optimizer_state(o))
                            for o in self.optimizers]
        schedulers = list(self.lr_scheduler_configs)
        scheduler_states = [copy.deepcopy(c.scheduler.state_dict()) for c in schedulers]
        rng = rng_states()
        outer = (self.callbacks, self.hooks, self.loggers, self.module.training)
        self.callbacks = list(callbacks)
        self.hooks = HookTable(self, self.module, self.callbacks)
        self.loggers = []
        run.restore, self.should_stop = None, False
        try:
            if prepare is not None:
                prepare()
            if self.state == "fit":
                self.max_steps, self.max_time = self.global_step + steps, None
                self.min_steps = self.min_epochs = 0
                self.limit_val_batches = 0
                loops.fit(self, {"train": loaders.get("train")}, trial=True)
            else:
                setattr(self, loops.STAGE_LIMITS[self.state][0], steps)
                if self.state == "predict":
                    loops.predict(self, loaders.get("predict"), False)
                else:
                    loops.evaluate_stage(self, self.state, loaders, verbose=False)
        finally:
            for flag, value in saved_flags.items():
                setattr(self, flag, value)
            (self.global_step, self.current_epoch, run.progress, self.should_stop,
             self.num_training_batches, self.num_val_batches, run.restore,
             run.loop_state) = counters
            self.metrics.restore(metrics)
            self.callbacks, self.hooks, self.loggers, training = outer
            self.strategy.load_module_state_dict(state)
            for optimizer, optimizer_state in zip(self.optimizers, optimizer_states):
                self.strategy.load_optimizer_state(optimizer, optimizer_state)
            self.lr_scheduler_configs[:] = schedulers
            for scheduler_config, scheduler_state in zip(schedulers, scheduler_states):
                scheduler_config.scheduler.load_state_dict(scheduler_state)
            set_rng_states(rng)
            self.module.train(training)
            run.trials += 1

    @contextlib.contextmanager
    def init_module(self, empty_init: bool | None = None) -> Iterator[None]:
        """Create the module's tensors on the strategy's device and in the precision's dtype
        right away (Lightning's ``trainer.init_module``); ``empty_init=True`` skips initialising
        weights a checkpoint will overwrite. Under a strategy that shards parameters, build the
        model in ``Module.configure_model`` instead (warned, as in Lightning)."""
        from fulmen.lite_wrappers import EmptyInit

        if self.strategy.shards_parameters:
            rank_zero_warn(f"`trainer.init_module` cannot fully support proper instantiation of "
                           f"your model with the `{self.strategy.name}` strategy. Please "
                           "instantiate your model inside the `Module.configure_model` hook "
                           "instead")
        skip = EmptyInit() if empty_init else contextlib.nullcontext()
        with skip, torch.device(self.strategy.root_device), \
                self.strategy.precision.module_init_context():
            yield

    def print(self, *args: Any, **kwargs: Any) -> None:
        if self.is_global_zero:
            print(*args, **kwargs)

    # ------------------------------------------------------------------ running a stage

    def _evaluate(self, stage: str, model: Module | None, dataloaders: Any, ckpt_path: Any,
                  datamodule: DataModule | None, verbose: bool,
                  weights_only: bool) -> list[dict[str, float]]:
        if isinstance(dataloaders, DataModule):
            datamodule, dataloaders = dataloaders, None
        ckpt_path = save_restore.select(self, stage, ckpt_path, model is not None)
        model = self._check_call(model or self.module, datamodule, stage, dataloaders)
        self.module, self.datamodule = model, datamodule
        key = "val" if stage == "validate" else "test"
        return self.strategy.launch(self._run, stage, model, datamodule, ckpt_path, weights_only,
                                    {key: dataloaders}, verbose)

    def _check_call(self, model: Any, datamodule: Any, stage: str, *loaders: Any) -> Module:
        if model is None:
            raise ConfigurationError(f"trainer.{stage}() needs a model: pass a fulmen.Module")
        model, compiled = compiling.unwrap(model)  # torch.compile(model): compiled after set-up
        if compiled is not None and self.compile_options is None:
            self.compile_options = compiled
        if not isinstance(model, Module):
            raise ConfigurationError(f"trainer.{stage}(model=...) got a {type(model).__name__}; "
                                     "it takes a fulmen.Module (subclass fulmen.Module, or use "
                                     "fulmen.Lite for a plain torch.nn.Module)")
        if datamodule is not None and not isinstance(datamodule, DataModule):
            raise ConfigurationError(f"trainer.{stage}(datamodule=...) got a "
                                     f"{type(datamodule).__name__}; it takes a fulmen.DataModule")
        if datamodule is not None and any(x is not None for x in loaders):
            raise ConfigurationError(f"trainer.{stage}() got both dataloaders and a datamodule; "
                                     "pass one of them")
        refuse_legacy_hooks(model, stage)
        return model

    def _run(self, stage: str, model: Module, datamodule: DataModule | None, ckpt_path: Any,
             weights_only: bool, loaders: dict[str, Any], *extra: Any) -> Any:
        """One stage in this process, watched by the hang doctor from its first line: every
        wait for another rank (process group, setup, broadcasts, barriers, prepare_data, the
        first batch, the loops) is reported if it stalls, and a stalled job ends. A single
        process (no other rank to wait for) is watched from its loops on."""
        doctor = HangDoctor(self._progress_mark, rank=self.global_rank,
                            world_size=self.world_size,
                            address=self.cluster_environment.main_address,
                            port=self.cluster_environment.main_port,
                            describe_phase=self._hang_phase)
        if self.world_size > 1:
            doctor.start()
        try:
            with hang.phase(f"{stage} set-up"):
                return self._run_stage(doctor, stage, model, datamodule, ckpt_path,
                                       weights_only, loaders, *extra)
        finally:
            doctor.stop()

    def _run_stage(self, doctor: HangDoctor, stage: str, model: Module,
                   datamodule: DataModule | None, ckpt_path: Any, weights_only: bool,
                   loaders: dict[str, Any], *extra: Any) -> Any:
        """One stage in this process: set-up, restore, loop, teardown."""
        quick_exit.install()  # in a spawned rank too, where __init__ did not run
        self.state, self.module, self.datamodule = stage, model, datamodule
        run = self.run_state
        run.stage_loaders, run.trials, run.trials_seen = loaders, 0, 0
        self.should_stop = False
        run.start_time = time.monotonic()
        self.metrics.start_stage()
        model.trainer = self
        if datamodule is not None:
            datamodule.trainer = self
        hook_stage = {"validate": "validate"}.get(stage, stage)
        with hang.phase(f"strategy setup ({self.strategy.name}.setup_environment: the "
                        "process group)"):
            self.strategy.setup_environment()
        set_rank(self.global_rank)
        doctor.rank, doctor.world_size = self.global_rank, self.world_size
        with hang.phase("broadcast of the loggers' version"):
            for lg in self.loggers:  # every rank must agree on the run directory
                lg.set_version(self.strategy.broadcast(lg.version))
        callbacks_from_model = config.as_list(model.configure_callbacks(), Callback,
                                        "configure_callbacks()")
        self.callbacks = config.merge_callbacks(self.callbacks, callbacks_from_model)
        self._prepare_data()  # after configure_callbacks, as Lightning
        self.hooks = HookTable(self, model, self.callbacks, profiler=self._active_profiler())
        self.profiler.setup(stage, self.local_rank, self.log_dir)
        try:
            with hang.phase(f"setup('{hook_stage}')"):
                if datamodule is not None:
                    datamodule.setup(hook_stage)
                self.hooks("setup", hook_stage)
            self.hooks.drop_unused(hook_stage)
            if type(model).configure_model is not Module.configure_model:
                with hang.phase("configure_model"), self.strategy.module_init_context():
                    model.configure_model()
            self.strategy.sync_batchnorm = self.sync_batchnorm
            self.strategy.run_config = RunConfig(  # the flags a strategy may need (a contract)
                "Trainer", self.accumulate_grad_batches, self.gradient_clip_val,
                self.gradient_clip_algorithm or "norm")
            with hang.phase(f"strategy setup ({self.strategy.name}.setup_module: wrapping "
                            "the model, which may broadcast its parameters)"):
                self.strategy.setup_module(model)
            if self.compile_options is not None and id(model) not in self._compiled:
                # in place (keys keep their names), step methods too, as Lightning does
                compiling.apply(model, self.compile_options, steps=True)
                self._compiled.add(id(model))
            if stage == "fit":
                self.optimization.configure(model)
            if stage == "fit" and ckpt_path is None and self.cluster_environment.restart_count():
                ckpt_path = save_restore.newest_agreed(self)  # the scheduler restarted this job
            with hang.phase("restoring the checkpoint"):
                run.restore = save_restore.restore(self, stage, ckpt_path, weights_only)
            if stage == "fit" and self.enable_autolog_hparams:  # after restore: a resumed
                self._log_hyperparams()  # run's loggers continue it (Lightning's order)
            if self.is_global_zero:
                self._announce(stage, ckpt_path)
            preemption = Preemption(self) if stage == "fit" else contextlib.nullcontext()
            doctor.start()  # (already watching in a job of several processes)
            with hang.phase(f"{stage} loop"), self._anomaly_context(), \
                    preemption as run.preemption:
                result: Any = None
                if stage == "fit":
                    loops.fit(self, loaders)
                elif stage == "predict":
                    result = loops.predict(self, loaders["predict"], *extra)
                else:
                    result = loops.evaluate_stage(self, stage, loaders, *extra)
        except Preempted as stop:  # the checkpoint is written: leave like a finished run
            self._teardown(hook_stage, failed=False, status=INTERRUPTED)
            raise SystemExit(stop.exit_code) from None
        except StageExit:  # a callback ended the stage on purpose (the tuner, after tuning)
            self._teardown(hook_stage, failed=False)
            return None
        except BaseException as exc:
            self.strategy.on_exception(exc)
            self.hooks("on_exception", exc)
            if datamodule is not None:
                datamodule.on_exception(exc)
            self._teardown(hook_stage, failed=True, status=INTERRUPTED
                           if isinstance(exc, KeyboardInterrupt) else FAILED)
            raise
        with hang.phase("teardown"):
            self._teardown(hook_stage, failed=False)
        self.profiler.describe()
        return result

    def _active_profiler(self) -> profilers.Profiler | None:
        """The profiler, unless it records nothing (then the hooks are called unwrapped)."""
        return None if isinstance(self.profiler, profilers.PassThroughProfiler) else self.profiler

    def _announce(self, stage: str, ckpt_path: Any) -> None:
        """The run banner (rank 0): what was composed, where logs and checkpoints go."""
        checkpoint = self.checkpoint_callback
        progress = (f"epoch {self.current_epoch}, step {self.global_step}"
                    if ckpt_path is not None else None)
        configure_logging().info("%s", banner(
            self, stage, log_dir=self.log_dir,
            checkpoint_dir=None if checkpoint is None else checkpoint.dirpath,
            resumed_from=None if ckpt_path is None else str(ckpt_path), progress=progress))

    def worker_state(self) -> dict[str, Any]:
        """What a spawned rank 0 sends back to the main process after a stage."""
        cb = self.checkpoint_callback
        module = self.module
        return {
            "weights": {k: v.detach().cpu() for k, v in module.state_dict().items()}
            if module is not None else None,
            **self.metrics.worker_state(),
            "global_step": self.global_step, "current_epoch": self.current_epoch,
            "checkpoint": cb.state_dict() if cb is not None else None,
            "loggers": self.logger_set.state_dict(),  # the runs rank 0 made, for later stages
        }

    def load_worker_state(self, state: dict[str, Any]) -> None:
        if state["weights"] is not None and self.module is not None:
            self.module.load_state_dict(state["weights"])
        self.metrics.load_worker_state(state)
        self.global_step, self.current_epoch = state["global_step"], state["current_epoch"]
        self.logger_set.load_state_dict(state.get("loggers", {}), ask_trackers=False)
        cb = self.checkpoint_callback
        if cb is not None and state["checkpoint"] is not None:
            cb.load_state_dict(state["checkpoint"])

    def _log_hyperparams(self) -> None:
        """Lightning's: each logger gets the hyper-parameters of the module and the datamodule
        (those whose ``save_hyperparameters(logger=False)`` did not opt out), then the
        module's graph; on global rank zero."""
        if not self.loggers or not self.is_global_zero or self.module is None:
            return
        params: dict[str, Any] | None = None
        if self.module._log_hyperparams:
            params = dict(self.module.hparams_initial)
        if self.datamodule is not None and self.datamodule._log_hyperparams:
            params = {**(params or {}), **self.datamodule.hparams}
        if params is not None:
            self.logger_set.log_hyperparams(params)
        self.logger_set.log_graph(self.module)

    def _prepare_data(self) -> None:
        """``prepare_data`` of the DataModule and the module: once per node (local rank 0),
        or once per job (global rank 0) where ``prepare_data_per_node = False``."""
        from fulmen.datamodule import DataModule

        owners: list[tuple[Any, Any]] = [(self.datamodule, DataModule), (self.module, Module)]
        for owner, base in owners:
            if owner is None or type(owner).prepare_data is base.prepare_data:
                continue
            rank = self.local_rank if owner.prepare_data_per_node else self.global_rank
            if rank == 0:
                with hang.phase(f"prepare_data ({type(owner).__name__}.prepare_data)"):
                    owner.prepare_data()
        with hang.phase("barrier after prepare_data (the ranks that prepare data keep the "
                        "others here)"):
            self.strategy.barrier("prepare_data")

    def _teardown(self, stage: str, failed: bool, status: str | None = None) -> None:
        errors: list[BaseException] = []
        status = status or (FAILED if failed else SUCCESS)
        for action in (lambda: self.hooks("teardown", stage) if self.hooks else None,
                       lambda: self.datamodule.teardown(stage) if self.datamodule else None,
                       lambda: self._finalize_loggers(status),
                       self.strategy.teardown):
            try:
                action()
            except Exception as exc:  # teardown must not hide the original error
                errors.append(exc)
        self.metrics.current = None
        if errors and not failed:
            raise errors[0]

    def _finalize_loggers(self, status: str) -> None:
        self.logger_set.finalize(status)

    def _progress_mark(self) -> tuple[int, int]:
        """What the hang doctor watches: hook calls, and training batches started (the fit
        loop calls no hook per batch when nothing overrides the batch hooks); phases (set-up,
        barriers, ...) count on their own (``fulmen.hang.phase``)."""
        calls = self.hooks.count() if self.hooks is not None else 0
        return calls, self.run_state.progress.batches.started

    def _hang_phase(self) -> str:
        """The phase a hang report names: set-up steps by name; in the fit loop, which
        training batch (none yet: the first batch is being loaded or run)."""
        name = hang.current_phase()
        if name == "fit loop":
            started = self.run_state.progress.batches.started
            return (f"fit loop, training batch {started}" if started else
                    "fit loop, before the first training batch (loading it, or the sanity "
                    "check)")
        return name

    def _anomaly_context(self) -> Any:
        if self.detect_anomaly:
            return torch.autograd.detect_anomaly(check_nan=True)
        return contextlib.nullcontext()

    def _configure_determinism(self) -> None:
        if self.deterministic:
            warn_only = self.deterministic == "warn"
            torch.use_deterministic_algorithms(True, warn_only=warn_only)
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        if self.benchmark is not None:
            torch.backends.cudnn.benchmark = self.benchmark

    # ------------------------------------------------------------------ metrics

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
