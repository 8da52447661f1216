"""Running one stage in this process (what ``strategy.launch`` runs on every rank): set-up,
restore from a checkpoint, the stage's loop, teardown; with the hang doctor watching the loop
and every exception reported to the strategy, the callbacks and the datamodule."""

from __future__ import annotations

import contextlib
import functools
import time
from typing import TYPE_CHECKING, Any

import torch

from fulmen import compiling, hang, profilers, quick_exit
from fulmen.api import RunConfig
from fulmen.api.logger import FAILED, INTERRUPTED, SUCCESS
from fulmen.callbacks.base import Callback
from fulmen.datamodule import DataModule
from fulmen.errors import StageExit
from fulmen.hang import HangDoctor
from fulmen.kernel.banner import banner
from fulmen.look import show_banner
from fulmen.module import Module
from fulmen.seed import reset_seed
from fulmen.status import configure_logging
from fulmen.trainer import config, default_callbacks, save_restore
from fulmen.trainer.hooks import HookTable
from fulmen.trainer.preemption import FitPreemption, Preempted
from fulmen.trainer.states import STAGE_OF, TrainerFn, TrainerStatus
from fulmen.utilities.rank_zero import set_rank

if TYPE_CHECKING:
    from fulmen.trainer.stage_host import StageHost


def run_stage(trainer: StageHost, stage: str, model: Module, datamodule: DataModule | None,
              ckpt_path: Any, weights_only: bool | None, loaders: dict[str, Any],
              *extra: Any) -> Any:
    """One stage in this process, watched by the hang doctor from its first line: every
    wait for another rank (process group, setup, broadcasts, barriers, prepare_data, the
    first batch, the loops) is reported if it stalls, and a stalled job ends. A single
    process (no other rank to wait for) is watched from its loops on."""
    doctor = HangDoctor(functools.partial(_progress_mark, trainer), rank=trainer.global_rank,
                        world_size=trainer.world_size,
                        address=trainer.cluster_environment.main_address,
                        port=trainer.cluster_environment.main_port,
                        describe_phase=functools.partial(_hang_phase, trainer))
    if trainer.world_size > 1:
        doctor.start()
    try:
        with hang.phase(f"{stage} set-up"):
            return _run_stage(trainer, doctor, stage, model, datamodule, ckpt_path,
                                   weights_only, loaders, *extra)
    finally:
        doctor.stop()

def _run_stage(trainer: StageHost, doctor: HangDoctor, stage: str, model: Module,
               datamodule: DataModule | None, ckpt_path: Any, weights_only: bool | None,
               loaders: dict[str, Any], *extra: Any) -> Any:
    """One stage in this process: set-up, restore, loop, teardown."""
    quick_exit.install()  # in a spawned rank too, where __init__ did not run
    fn = TrainerFn(stage)
    trainer.state.fn, trainer.state.status, trainer.state.stage = fn, TrainerStatus.RUNNING, \
        STAGE_OF[fn]
    trainer.module, trainer.datamodule = model, datamodule
    run = trainer.run_state
    run.stage_loaders, run.trials, run.trials_seen = loaders, 0, 0
    run.fit_data = None
    trainer.should_stop = False
    run.start_time = time.monotonic()
    trainer.metrics.start_stage()
    model.trainer = trainer
    if datamodule is not None:
        datamodule.trainer = trainer
    hook_stage = {"validate": "validate"}.get(stage, stage)
    with hang.phase(f"strategy setup ({trainer.strategy.name}.setup_environment: the "
                    "process group)"):
        if "Trainer" in trainer.strategy.reseeds_at_setup:
            reset_seed()  # as Lightning's strategies do (Strategy.reseeds_at_setup)
        trainer.strategy.setup_environment()
    set_rank(trainer.global_rank)
    doctor.rank, doctor.world_size = trainer.global_rank, trainer.world_size
    with hang.phase("broadcast of the loggers' version"):
        for lg in trainer.loggers:  # every rank must agree on the run directory
            lg.set_version(trainer.strategy.broadcast(lg.version))
    callbacks_from_model = config.as_list(model.configure_callbacks(), Callback,
                                    "configure_callbacks()")
    trainer.callbacks = default_callbacks.merge_callbacks(trainer.callbacks, callbacks_from_model)
    _prepare_data(trainer)  # after configure_callbacks, as Lightning
    trainer.hooks = HookTable(trainer, model, trainer.callbacks, profiler=_active_profiler(trainer))
    trainer.profiler.setup(stage, trainer.local_rank, trainer.log_dir)
    try:
        with hang.phase(f"setup('{hook_stage}')"):
            if datamodule is not None:
                datamodule.setup(hook_stage)
            trainer.hooks("setup", hook_stage)
        trainer.hooks.drop_unused(hook_stage)
        if type(model).configure_model is not Module.configure_model:
            with hang.phase("configure_model"), trainer.strategy.module_init_context():
                model.configure_model()
        trainer.strategy.sync_batchnorm = trainer.sync_batchnorm
        trainer.strategy.run_config = RunConfig(  # the flags a strategy may need (a contract)
            "Trainer", trainer.accumulate_grad_batches, trainer.gradient_clip_val,
            trainer.gradient_clip_algorithm or "norm")
        with hang.phase(f"strategy setup ({trainer.strategy.name}.setup_module: wrapping "
                        "the model, which may broadcast its parameters)"):
            trainer.strategy.setup_module(model)
        if trainer.compile_options is not None and id(model) not in trainer.compiled_modules:
            # in place (keys keep their names), step methods too, as Lightning does
            compiling.apply(model, trainer.compile_options, steps=True)
            trainer.compiled_modules.add(id(model))
        if stage == "fit":
            trainer.optimization.configure(model)
        if stage == "fit" and ckpt_path is None and trainer.cluster_environment.restart_count():
            ckpt_path = save_restore.newest_agreed(trainer)  # the scheduler restarted this job
        with hang.phase("restoring the checkpoint"):
            run.restore = save_restore.restore(trainer, stage, ckpt_path, weights_only)
        if stage == "fit" and trainer.enable_autolog_hparams:  # after restore: a resumed
            _log_hyperparams(trainer)  # run's loggers continue it (Lightning's order)
        if trainer.is_global_zero:
            _announce(trainer, stage, trainer.ckpt_path)
            if trainer.barebones:  # no progress bar can make it look like the Trainer hung
                configure_logging().info(
                    "`Trainer(barebones=True)` started running. The progress bar is disabled so "
                    "you might want to manually print the progress in your model.")
        preemption = FitPreemption(trainer, ckpt_path) if stage == "fit" else \
            contextlib.nullcontext()
        doctor.start()  # (already watching in a job of several processes)
        with hang.phase(f"{stage} loop"), _anomaly_context(trainer), \
                preemption as run.preemption:
            result: Any = None
            if stage == "fit":
                trainer.fit_loop.run(loaders)
            elif stage == "predict":
                result = trainer.predict_loop.run(loaders["predict"], *extra)
            else:
                result = trainer.evaluation_loop.run_stage(stage, loaders, *extra)
    except Preempted as stop:  # the checkpoint is written: leave like a finished run
        trainer.state.status = TrainerStatus.INTERRUPTED
        _teardown(trainer, hook_stage, failed=False, status=INTERRUPTED)
        trainer.state.stage = None
        raise SystemExit(stop.exit_code) from None
    except StageExit:  # a callback ended the stage on purpose (the tuner, after tuning)
        _teardown(trainer, hook_stage, failed=False)
        trainer.state.status, trainer.state.stage = TrainerStatus.FINISHED, None
        return None
    except BaseException as exc:
        trainer.state.status = TrainerStatus.INTERRUPTED  # before on_exception (Lightning)
        trainer.strategy.on_exception(exc)
        trainer.hooks("on_exception", exc)
        if datamodule is not None:
            datamodule.on_exception(exc)
        _teardown(trainer, hook_stage, failed=True, status=INTERRUPTED
                       if isinstance(exc, KeyboardInterrupt) else FAILED)
        trainer.state.stage = None  # after teardown, which may read it (Lightning)
        raise
    with hang.phase("teardown"):
        _teardown(trainer, hook_stage, failed=False)
    trainer.state.status, trainer.state.stage = TrainerStatus.FINISHED, None
    trainer.profiler.describe()
    return result

def _active_profiler(trainer: StageHost) -> profilers.Profiler | None:
    """The profiler, unless it records nothing (then the hooks are called unwrapped)."""
    return None if isinstance(trainer.profiler, profilers.PassThroughProfiler) else trainer.profiler

def _announce(trainer: StageHost, stage: str, ckpt_path: Any) -> None:
    """The run banner (rank 0): what was composed, where logs and checkpoints go."""
    if not show_banner():  # FULMEN_BANNER; off under fulmen run's Lightning look (fulmen.look)
        return
    checkpoint = trainer.checkpoint_callback
    progress = (f"epoch {trainer.current_epoch}, step {trainer.global_step}"
                if ckpt_path is not None else None)
    configure_logging().info("%s", banner(
        trainer, stage, log_dir=trainer.log_dir,
        checkpoint_dir=None if checkpoint is None else checkpoint.dirpath,
        resumed_from=None if ckpt_path is None else str(ckpt_path), progress=progress))

def _log_hyperparams(trainer: StageHost) -> None:
    """Lightning's: each logger gets the hyper-parameters of the module and the datamodule
    (those whose ``save_hyperparameters(logger=False)`` did not opt out), then the
    module's graph; on global rank zero."""
    if not trainer.loggers or not trainer.is_global_zero or trainer.module is None:
        return
    params: dict[str, Any] | None = None
    if trainer.module._log_hyperparams:
        params = dict(trainer.module.hparams_initial)
    if trainer.datamodule is not None and trainer.datamodule._log_hyperparams:
        params = {**(params or {}), **trainer.datamodule.hparams}
    if params is not None:
        trainer.logger_set.log_hyperparams(params)
    trainer.logger_set.log_graph(trainer.module)

def _prepare_data(trainer: StageHost) -> None:
    """``prepare_data`` of the DataModule and the module: once per node (local rank 0),
    or once per job (global rank 0) where ``prepare_data_per_node = False``."""
    from fulmen.datamodule import DataModule

    owners: list[tuple[Any, Any]] = [(trainer.datamodule, DataModule), (trainer.module, Module)]
    for owner, base in owners:
        if owner is None or type(owner).prepare_data is base.prepare_data:
            continue
        rank = trainer.local_rank if owner.prepare_data_per_node else trainer.global_rank
        if rank == 0:
            with hang.phase(f"prepare_data ({type(owner).__name__}.prepare_data)"):
                owner.prepare_data()
    with hang.phase("barrier after prepare_data (the ranks that prepare data keep the "
                    "others here)"):
        trainer.strategy.barrier("prepare_data")

def _teardown(trainer: StageHost, stage: str, failed: bool, status: str | None = None) -> None:
    errors: list[BaseException] = []
    status = status or (FAILED if failed else SUCCESS)
    for action in (lambda: trainer.hooks("teardown", stage) if trainer.hooks else None,
                   lambda: trainer.datamodule.teardown(stage) if trainer.datamodule else None,
                   lambda: _finalize_loggers(trainer, status),
                   trainer.strategy.teardown):
        try:
            action()
        except Exception as exc:  # teardown must not hide the original error
            errors.append(exc)
    trainer.metrics.current = None
    if errors and not failed:
        raise errors[0]

def _finalize_loggers(trainer: StageHost, status: str) -> None:
    trainer.logger_set.finalize(status)

def _progress_mark(trainer: StageHost) -> tuple[int, int]:
    """What the hang doctor watches: hook calls, and training batches started (the fit
    loop calls no hook per batch when nothing overrides the batch hooks); phases (set-up,
    barriers, ...) count on their own (``fulmen.hang.phase``)."""
    calls = trainer.hooks.count() if trainer.hooks is not None else 0
    return calls, trainer.run_state.progress.batches.started

def _hang_phase(trainer: StageHost) -> str:
    """The phase a hang report names: set-up steps by name; in the fit loop, which
    training batch (none yet: the first batch is being loaded or run)."""
    name = hang.current_phase()
    if name == "fit loop":
        started = trainer.run_state.progress.batches.started
        return (f"fit loop, training batch {started}" if started else
                "fit loop, before the first training batch (loading it, or the sanity "
                "check)")
    return name

def _anomaly_context(trainer: StageHost) -> Any:
    if trainer.detect_anomaly:
        return torch.autograd.detect_anomaly(check_nan=True)
    return contextlib.nullcontext()

