"""``Trainer``: composes the plugins at construction, then runs fit/validate/test/predict."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch

from fulmen import arguments, compiling, profilers, quick_exit
from fulmen.callbacks.base import Callback
from fulmen.checkpoint import service
from fulmen.datamodule import DataModule
from fulmen.errors import FulmenError
from fulmen.kernel.banner import announce_devices
from fulmen.kernel.selection import select
from fulmen.module import Module
from fulmen.seed import configure_determinism
from fulmen.status import configure_logging
from fulmen.trainer import config, default_callbacks, save_restore
from fulmen.trainer.evaluation_loop import EvaluationLoop
from fulmen.trainer.fit_loop import FitLoop
from fulmen.trainer.hooks import HookTable
from fulmen.trainer.metrics import Metrics
from fulmen.trainer.optimization import Optimization
from fulmen.trainer.predict_loop import PredictionLoop
from fulmen.trainer.progress import RunState
from fulmen.trainer.properties import TrainerProperties
from fulmen.trainer.stage import run_stage
from fulmen.trainer.states import STAGE_OF, TrainerFn, TrainerState, TrainerStatus
from fulmen.utilities.rank_zero import current_rank, rank_zero_warn


class Trainer(TrainerProperties):
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
        logger: True or None (TensorBoard or CSV logger in default_root_dir), False, or
            loggers.
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
        val_check_interval: validate every this many training batches (int), this fraction of
            an epoch (float), or at the first batch end after this long since the last
            validation (``"DD:HH:MM:SS"``, a timedelta or ``{"minutes": 30}``).
        check_val_every_n_epoch: validate every this many epochs (None: by val_check_interval
            only).
        num_sanity_val_steps: validation batches run before training (-1: all, 0: none;
            None: 2).
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
            losses are checked for NaN/inf (None: 50; 0: step metrics are not logged).
        enable_checkpointing: add a ModelCheckpoint when none is given (None: True).
        enable_progress_bar: show a progress bar (None: True).
        enable_model_summary: log a summary of the model when fit starts (None: True).
        default_root_dir: where logs and checkpoints go (default: the working directory).
        use_distributed_sampler: wrap dataloaders in a DistributedSampler when distributed.
        sync_batchnorm: convert BatchNorm layers to SyncBatchNorm.
        inference_mode: evaluate under ``torch.inference_mode`` (False: ``torch.no_grad``).
        barebones: turn off everything that may cost speed, to measure the Trainer's own
            overhead: checkpointing, loggers and ``self.log``, the progress bar, the model
            summary, the sanity check (asking for one of them, or for ``fast_dev_run``,
            ``detect_anomaly`` or a profiler, is an error).
        reload_dataloaders_every_n_epochs: request the training and validation dataloaders
            from the module or datamodule again every this many epochs (0: once).
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
        logger: Any = None,
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
        val_check_interval: int | float | str | timedelta | dict[str, int] | None = None,
        check_val_every_n_epoch: int | None = 1,
        num_sanity_val_steps: int | None = None,
        fast_dev_run: int | bool = False,
        accumulate_grad_batches: int = 1,
        gradient_clip_val: int | float | None = None,
        gradient_clip_algorithm: str | None = None,
        deterministic: bool | str | None = None,
        benchmark: bool | None = None,
        detect_anomaly: bool = False,
        profiler: Any = None,
        compile: bool | dict[str, Any] | None = None,
        log_every_n_steps: int | None = None,
        enable_checkpointing: bool | None = None,
        enable_progress_bar: bool | None = None,
        enable_model_summary: bool | None = None,
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
        settings = config.TrainerConfig.check(
            max_epochs=max_epochs, min_epochs=min_epochs, max_steps=max_steps,
            min_steps=min_steps, max_time=max_time, limit_train_batches=limit_train_batches,
            limit_val_batches=limit_val_batches, limit_test_batches=limit_test_batches,
            limit_predict_batches=limit_predict_batches, overfit_batches=overfit_batches,
            fast_dev_run=fast_dev_run, val_check_interval=val_check_interval,
            check_val_every_n_epoch=check_val_every_n_epoch,
            num_sanity_val_steps=num_sanity_val_steps,
            accumulate_grad_batches=accumulate_grad_batches,
            gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm,
            deterministic=deterministic, benchmark=benchmark, detect_anomaly=detect_anomaly,
            log_every_n_steps=log_every_n_steps, enable_checkpointing=enable_checkpointing,
            enable_progress_bar=enable_progress_bar, enable_model_summary=enable_model_summary,
            logger=logger, use_distributed_sampler=use_distributed_sampler,
            replace_sampler_ddp=replace_sampler_ddp, sync_batchnorm=sync_batchnorm,
            inference_mode=inference_mode, enable_autolog_hparams=enable_autolog_hparams,
            suggest_integrations=suggest_integrations, default_root_dir=default_root_dir,
            barebones=barebones,
            reload_dataloaders_every_n_epochs=reload_dataloaders_every_n_epochs,
            model_registry=model_registry, profiler=profiler)
        quick_exit.install()
        self._selection = select("Trainer", accelerator=accelerator, strategy=strategy,
                                 devices=devices, num_nodes=num_nodes, precision=precision,
                                 plugins=plugins, gpus=gpus, tpu_cores=tpu_cores)
        # the run flags, checked: Lightning's attributes, which the loops and callbacks read
        self.max_epochs = settings.max_epochs
        self.min_epochs = settings.min_epochs
        self.max_steps = settings.max_steps
        self.min_steps = settings.min_steps
        self.max_time = settings.max_time
        self.limit_train_batches = settings.limit_train_batches
        self.limit_val_batches = settings.limit_val_batches
        self.limit_test_batches = settings.limit_test_batches
        self.limit_predict_batches = settings.limit_predict_batches
        self.overfit_batches = settings.overfit_batches
        self.fast_dev_run = settings.fast_dev_run
        self.val_check_interval = settings.val_check_interval
        #: seconds between validations when ``val_check_interval`` was a duration
        #: (``"DD:HH:MM:SS"``, a timedelta or its keywords), else None
        self.val_check_time_interval = settings.val_check_time_interval
        self.check_val_every_n_epoch = settings.check_val_every_n_epoch
        self.num_sanity_val_steps = settings.num_sanity_val_steps
        self.accumulate_grad_batches = settings.accumulate_grad_batches
        self.gradient_clip_val = settings.gradient_clip_val
        self.gradient_clip_algorithm = settings.gradient_clip_algorithm
        self.deterministic = settings.deterministic
        self.benchmark = settings.benchmark
        self.detect_anomaly = settings.detect_anomaly
        self.log_every_n_steps = settings.log_every_n_steps
        self.enable_checkpointing = settings.enable_checkpointing
        self.use_distributed_sampler = settings.use_distributed_sampler
        self.sync_batchnorm = settings.sync_batchnorm
        self.inference_mode = settings.inference_mode
        self.enable_autolog_hparams = settings.enable_autolog_hparams
        self.suggest_integrations = settings.suggest_integrations
        #: request the training and validation dataloaders again every n epochs (0: once)
        self.reload_dataloaders_every_n_epochs = settings.reload_dataloaders_every_n_epochs
        #: everything that may cost speed is off (Lightning's ``barebones`` mode)
        self.barebones = settings.barebones
        if settings.barebones:
            configure_logging().info("%s", config.BAREBONES_INFO)
        self.profiler = profilers.resolve(profiler)
        self.compile_options = compiling.options("Trainer", compile)
        compiling.check_backend("Trainer", self.compile_options,
                                self._selection.accelerator.device_type)
        #: ids of the modules compiled in place already (compiled once per module)
        self.compiled_modules: set[int] = set()
        self._default_root_dir = config.root_dir(default_root_dir)
        configure_determinism(self.deterministic, self.benchmark)

        from fulmen.loggers import resolve_loggers
        from fulmen.loggers.dispatch import LoggerSet

        #: calls the loggers under the logger contract's rules (rank zero, one call per step,
        #: hyper-parameters once, failures isolated); ``loggers`` is its list
        self.logger_set = LoggerSet(resolve_loggers(settings.logger, self._default_root_dir),
                                    rank=current_rank)
        self.callbacks: list[Callback] = default_callbacks.default_callbacks(
            config.as_list(callbacks, Callback, "callbacks"), settings.enable_checkpointing,
            settings.enable_progress_bar, settings.enable_model_summary)
        announce_devices(self)  # Lightning's "GPU available: ..." lines, under its look only

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
        #: where the Trainer is: the method running (``state.fn``), the loop inside it
        #: (``state.stage``) and the status, as Lightning's ``trainer.state``
        self.state = TrainerState()
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
        #: the loops: fit (epochs of batches, validating inside), evaluation (validate, test,
        #: validation inside fit), predict
        self.evaluation_loop = EvaluationLoop(self)
        self.fit_loop = FitLoop(self, self.evaluation_loop)
        self.predict_loop = PredictionLoop(self)

    # ------------------------------------------------------------------ public API

    def fit(self, model: Module, train_dataloaders: Any = None, val_dataloaders: Any = None,
            datamodule: DataModule | None = None, ckpt_path: str | Path | None = None,
            weights_only: bool | None = None) -> None:
        """Train ``model``; validate along the way when validation data exists."""
        with self._running(TrainerFn.FITTING):
            if isinstance(train_dataloaders, DataModule):
                datamodule, train_dataloaders = train_dataloaders, None
            model = config.check_call(self, model, datamodule, "fit", train_dataloaders,
                                      val_dataloaders)
            self.module, self.datamodule = model, datamodule
            self.strategy.launch(self._run, "fit", model, datamodule, ckpt_path, weights_only,
                                 {"train": train_dataloaders, "val": val_dataloaders})

    def validate(self, model: Module | None = None, dataloaders: Any = None,
                 ckpt_path: str | Path | None = None, datamodule: DataModule | None = None,
                 verbose: bool = True, weights_only: bool | None = None) -> list[dict[str, float]]:
        """Run the validation loop once; returns one dict of metrics per dataloader."""
        return self._evaluate("validate", model, dataloaders, ckpt_path, datamodule, verbose,
                              weights_only)

    def test(self, model: Module | None = None, dataloaders: Any = None,
             ckpt_path: str | Path | None = None, datamodule: DataModule | None = None,
             verbose: bool = True, weights_only: bool | None = None) -> list[dict[str, float]]:
        """Run the test loop; returns one dict of metrics per dataloader."""
        return self._evaluate("test", model, dataloaders, ckpt_path, datamodule, verbose,
                              weights_only)

    def predict(self, model: Module | None = None, dataloaders: Any = None,
                datamodule: DataModule | None = None, ckpt_path: str | Path | None = None,
                return_predictions: bool = True, weights_only: bool | None = None) -> Any:
        """Run ``predict_step`` over the data; a list of outputs (one list per dataloader when
        there are several)."""
        with self._running(TrainerFn.PREDICTING):
            if isinstance(dataloaders, DataModule):
                datamodule, dataloaders = dataloaders, None
            ckpt_path = save_restore.select(self, "predict", ckpt_path, model is not None)
            model = config.check_call(self, model or self.module, datamodule, "predict",
                                      dataloaders)
            self.module, self.datamodule = model, datamodule
            return self.strategy.launch(self._run, "predict", model, datamodule, ckpt_path,
                                        weights_only, {"predict": dataloaders},
                                        return_predictions)

    def save_checkpoint(self, filepath: str | Path, weights_only: bool = False) -> None:
        """Write a checkpoint of the running state (weights only: model and hyper-parameters)."""
        if self.module is None:
            raise FulmenError("save_checkpoint needs a model: call it during or after fit")
        checkpoint = save_restore.dump(self, weights_only)
        service.save(self.strategy, checkpoint, filepath)
        self.strategy.barrier("save_checkpoint")

    def run_trial(self, steps: int, callbacks: Sequence[Callback] = (),
                  prepare: Callable[[], None] | None = None) -> None:
        """Run a tuner's trial inside the running stage, then put everything back as it was
        (:func:`fulmen.tuner.trial.run_trial`, which owns it, says what runs and what is put
        back)."""
        from fulmen.tuner.trial import run_trial

        run_trial(self, steps, callbacks, prepare)

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
        # empty_init under model_parallel: the meta device, materialised at setup (Lightning)
        where = (self.strategy.module_init_context() if empty_init
                 else contextlib.nullcontext())
        with skip, torch.device(self.strategy.root_device), \
                self.strategy.precision.module_init_context(), where:
            yield

    def print(self, *args: Any, **kwargs: Any) -> None:
        if self.is_global_zero:
            print(*args, **kwargs)

    # ------------------------------------------------------------------ running a stage

    def _evaluate(self, stage: str, model: Module | None, dataloaders: Any, ckpt_path: Any,
                  datamodule: DataModule | None, verbose: bool,
                  weights_only: bool | None) -> list[dict[str, float]]:
        with self._running(TrainerFn(stage)):
            if isinstance(dataloaders, DataModule):
                datamodule, dataloaders = dataloaders, None
            ckpt_path = save_restore.select(self, stage, ckpt_path, model is not None)
            model = config.check_call(self, model or self.module, datamodule, stage,
                                      dataloaders)
            self.module, self.datamodule = model, datamodule
            key = "val" if stage == "validate" else "test"
            return self.strategy.launch(self._run, stage, model, datamodule, ckpt_path,
                                        weights_only, {key: dataloaders}, verbose)

    @contextlib.contextmanager
    def _running(self, fn: TrainerFn) -> Iterator[None]:
        """``state`` as Lightning sets it around fit/validate/test/predict: the method, its
        first stage and ``running``; afterwards ``finished`` (``interrupted`` when it raised)
        and no stage. (In a process that ran the stage, :func:`run_stage` set the same.)"""
        self.state.fn, self.state.status, self.state.stage = fn, TrainerStatus.RUNNING, \
            STAGE_OF[fn]
        try:
            yield
        except BaseException:
            self.state.status, self.state.stage = TrainerStatus.INTERRUPTED, None
            raise
        self.state.status, self.state.stage = TrainerStatus.FINISHED, None

    def _run(self, stage: str, model: Module, datamodule: DataModule | None, ckpt_path: Any,
             weights_only: bool | None, loaders: dict[str, Any], *extra: Any) -> Any:
        """One stage in this process (:func:`fulmen.trainer.stage.run_stage`)."""
        return run_stage(self, stage, model, datamodule, ckpt_path, weights_only, loaders,
                         *extra)

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
