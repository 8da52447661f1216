"""A Trainer's checkpoint, dumped and restored: what ``trainer.save_checkpoint`` writes, which
file ``ckpt_path`` names, and how a stage is restored from it. The contents and the checks
shared with ``Module.load_from_checkpoint`` live in :mod:`fulmen.trainer.checkpoint`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fulmen import storage
from fulmen.checkpoint import service
from fulmen.errors import ConfigurationError
from fulmen.loggers.dispatch import STATE_KEY
from fulmen.trainer.checkpoint import (
    FORMAT_KEY,
    check_keys,
    require_fulmen_format,
    require_resumable_version,
    require_state_dict,
)
from fulmen.trainer.preemption import hpc_checkpoints
from fulmen.utilities.rank_zero import rank_zero_warn

if TYPE_CHECKING:
    from fulmen.trainer.stage_host import StageHost


def dump(trainer: StageHost, weights_only: bool = False) -> dict[str, Any]:
    """What ``trainer.save_checkpoint`` writes: weights, hyper-parameters and the manifest;
    unless ``weights_only``, also loop progress, optimizers, schedulers, precision, random
    states, callbacks and the datamodule."""
    from fulmen.checkpoint import manifest, rng
    from fulmen.references import encode_hparams
    from fulmen.seed import rng_states
    from fulmen.version import __version__

    assert trainer.module is not None
    checkpoint: dict[str, Any] = {
        FORMAT_KEY: __version__,
        "epoch": trainer.current_epoch,
        "global_step": trainer.global_step,
        "state_dict": trainer.strategy.module_state_dict(),
        trainer.module.CHECKPOINT_HYPER_PARAMS_KEY: encode_hparams(
            dict(trainer.module.hparams), type(trainer.module).__name__),
        trainer.module.CHECKPOINT_HYPER_PARAMS_NAME: trainer.module.hparams_name,
        manifest.KEY: manifest.origin(trainer.strategy.name, trainer.world_size, trainer.num_nodes,
                                      str(trainer.precision), trainer.strategy.device_mesh,
                                      trainer.strategy.data_parallel_size),
    }
    preemption = trainer.run_state.preemption
    if preemption is not None:  # when it was saved and why; the resumes that led here
        from fulmen.fault_tolerance.lost_work import KEY

        checkpoint[KEY] = preemption.checkpoint_entry()
    if not weights_only:
        checkpoint.update({
            "loops": {"fit": trainer.fit_loop.state_dict()},
            "optimizer_states": [trainer.strategy.optimizer_state(o) for o in trainer.optimizers],
            "lr_schedulers": [c.scheduler.state_dict() for c in trainer.lr_scheduler_configs],
            "precision": trainer.strategy.precision.state_dict(),
            "rng_states": rng_states(),
            "callbacks": {c.state_key: c.state_dict() for c in trainer.callbacks},
            # the loggers' runs, so that a resumed fit continues them
            STATE_KEY: trainer.logger_set.state_dict(),
        })
        rng.record(checkpoint, trainer.strategy, trainer.run_state.loop_state)  # every rank's
        if trainer.datamodule is not None:
            checkpoint["datamodule"] = trainer.datamodule.state_dict()
    for callback in trainer.callbacks:
        callback.on_save_checkpoint(trainer, trainer.module, checkpoint)
    trainer.module.on_save_checkpoint(checkpoint)
    return checkpoint


def select(trainer: StageHost, stage: str, ckpt_path: Any, model_provided: bool) -> Any:
    """The ``ckpt_path`` that ``validate``/``test``/``predict`` use, by Lightning 2.6's rules:
    what was given, else None when a model is passed (its weights as they are), else -- no
    model passed but one connected by an earlier ``fit`` (or stage) -- ``"best"``, with
    Lightning's warning."""
    if ckpt_path is not None or model_provided or trainer.module is None:
        return ckpt_path
    rank_zero_warn(f"`.{stage}(ckpt_path=None)` was called without a model. The best model of "
                   f"the previous `fit` call will be used. You can pass `.{stage}(ckpt_path="
                   f"'best')` to use the best model or `.{stage}(ckpt_path='last')` to use the "
                   "last model. If you pass a value, this warning will be silenced.")
    return "best"


def _method(trainer: StageHost) -> str:
    """The running Trainer method's name (``"fit"``, ``"validate"``...), for messages."""
    fn = trainer.state.fn
    return "fit" if fn is None else str(fn.value)


def _best(trainer: StageHost) -> str:
    """The best checkpoint of the first ModelCheckpoint (Lightning's errors and warning)."""
    stage, callbacks = _method(trainer), trainer.checkpoint_callbacks
    instead = ("Pass a checkpoint file" if stage == "fit" else
               f"Pass the model to use its weights as they are (trainer.{stage}(model, ...)), "
               "or a checkpoint file")
    if len(callbacks) > 1:
        rank_zero_warn(f'`.{stage}(ckpt_path="best")` is called with Trainer configured with '
                       "multiple `ModelCheckpoint` callbacks. It will use the best checkpoint "
                       "path from first checkpoint callback.")
    if not callbacks:
        raise ConfigurationError(f'`.{stage}(ckpt_path="best")` is set but `ModelCheckpoint` '
                                 f"is not configured. {instead}.")
    path = callbacks[0].best_model_path
    if not path:
        if trainer.fast_dev_run:
            raise ConfigurationError(
                f'You cannot execute `.{stage}(ckpt_path="best")` with `fast_dev_run=True`. '
                f"Please pass an exact checkpoint path to `.{stage}(ckpt_path=...)`.")
        raise ConfigurationError(
            f'`.{stage}(ckpt_path="best")` is set but `ModelCheckpoint` is not configured to '
            "save the best model (no checkpoint was saved: save_top_k=0, or no monitored value "
            f"yet). {instead}.")
    return str(path)


def resolve_path(trainer: StageHost, ckpt_path: Any) -> str | None:
    """``ckpt_path`` as a path: ``"last"``, ``"best"`` and ``"hpc"`` looked up.

    ``"last"`` is the newest complete checkpoint (:func:`newest`); when there is none yet the
    stage starts fresh with a warning, as Lightning does, so a script can always pass
    ``ckpt_path="last"`` and be restart-safe from its first attempt. Every rank takes rank
    zero's answer."""
    if ckpt_path is None:
        return None
    if ckpt_path in ("last", "best", "hpc"):
        cb = trainer.checkpoint_callback
        path: str | None = None
        if ckpt_path == "best":
            return _best(trainer)
        elif ckpt_path == "last":
            path = newest_agreed(trainer)
            if path is None:
                places = [f"default_root_dir={trainer.default_root_dir!r} (hpc_ckpt_<n>.ckpt)"]
                if cb is not None and cb.dirpath:
                    places.append(f"ModelCheckpoint dirpath={str(cb.dirpath)!r}")
                rank_zero_warn(f'.{_method(trainer)}(ckpt_path="last") is set, but there is no '
                               f"last checkpoint available in {' or '.join(places)}. No "
                               "checkpoint will be loaded: the run starts fresh. HINT: Set "
                               "`ModelCheckpoint(..., save_last=True)`.")
                return None
        elif ckpt_path == "hpc":
            found = hpc_checkpoints(trainer.default_root_dir)
            path = str(found[-1][1]) if found else None
        if not path:
            where = (f"no hpc_ckpt_<n>.ckpt in default_root_dir={trainer.default_root_dir!r}"
                     if ckpt_path == "hpc" else "no ModelCheckpoint callback" if cb is None
                     else f"ModelCheckpoint dirpath={str(cb.dirpath)!r}")
            raise ConfigurationError(f"ckpt_path={ckpt_path!r}: no {ckpt_path} checkpoint "
                                     f"is known ({where}); pass a file path")
        return str(path)
    return str(ckpt_path)


def newest_agreed(trainer: StageHost) -> str | None:
    """:func:`newest` as rank zero sees it, on every rank (they must load the same one)."""
    return trainer.strategy.broadcast(newest(trainer) if trainer.is_global_zero else None)


def newest(trainer: StageHost) -> str | None:
    """The most recently written complete checkpoint: a preemption checkpoint in
    default_root_dir or one of a ModelCheckpoint's (its ``CHECKPOINT_NAME_LAST`` file or any
    other with its ``FILE_EXTENSION`` in its dirpath; every ModelCheckpoint, as Lightning).

    Saves are atomic (a checkpoint gets its name only once whole), so a save a killed job left
    behind has a temporary name and is never a candidate; a candidate that is still incomplete
    (a directory missing a file its manifest lists, a truncated file, copied in part) is
    skipped with a warning and the next newest is taken."""
    candidates = [p for _, p in hpc_checkpoints(trainer.default_root_dir)]
    lasts: set[str] = set()
    for cb in trainer.checkpoint_callbacks:  # each with its own names and FILE_EXTENSION
        last = cb.find_last()
        if last:
            candidates.append(last)
            lasts.add(last)
        if cb.dirpath and storage.exists(cb.dirpath):
            candidates += [storage.join(cb.dirpath, name)
                           for name in storage.listdir(cb.dirpath)
                           if name.endswith(cb.FILE_EXTENSION)]
    existing = {p: storage.mtime(p) for p in dict.fromkeys(candidates) if storage.exists(p)}
    # on a tie (object stores count whole seconds) a "last" file wins
    for path in sorted(existing, key=lambda p: (existing[p], p in lasts), reverse=True):
        problem = incomplete(path)
        if problem is None:
            return path
        rank_zero_warn(f"skipping checkpoint {path!r} when looking for the newest: {problem}")
    return None


def incomplete(path: str) -> str | None:
    """Why the checkpoint at ``path`` is not whole, or None: a directory's manifest lists a
    file that is missing or has another size, or lists none; a file is not a complete
    ``torch.save`` zip. (Checksums are compared when it is loaded.)"""
    import zipfile
    from pathlib import Path

    from fulmen.checkpoint import canonical, manifest
    from fulmen.errors import FulmenError

    if storage.is_url(path):
        return None  # an object store shows an object only once it is whole
    local = Path(storage.local(path))
    if local.is_dir():
        try:
            if manifest.read_directory_manifest(local) is None:
                return f"it has no {manifest.FILE} (its save did not finish)"
            canonical.check_directory(local)
        except (FulmenError, ValueError) as exc:
            return str(exc)
        return None
    with open(local, "rb") as handle:
        legacy = handle.read(1) == b"\x80"
    if not legacy and not zipfile.is_zipfile(local):
        return f"it is not a complete torch.save file ({local.stat().st_size} bytes)"
    return None


def restore(trainer: StageHost, stage: str, ckpt_path: Any, weights_only: bool | None
            ) -> dict[str, Any] | None:
    """Load ``ckpt_path`` into the module (every stage) and, under fit, into callbacks,
    optimizers, schedulers, precision and datamodule; the checkpoint a fit resumes from."""
    path = trainer.ckpt_path = resolve_path(trainer, ckpt_path)
    if path is None:
        return None
    checkpoint = service.load(trainer.strategy, path, weights_only=weights_only)
    require_state_dict(checkpoint, path)
    if stage == "fit":  # before anything is loaded: a refused resume changes nothing
        require_fulmen_format(checkpoint, path)
        require_resumable_version(checkpoint, path)
    assert trainer.module is not None
    trainer.module.on_load_checkpoint(checkpoint)
    strict = trainer.module.strict_loading
    if strict:
        check_keys(trainer.module, checkpoint["state_dict"], path, remedy=(
            "Set model.strict_loading = False to load the keys that match."))
    try:
        trainer.strategy.load_module_state_dict(checkpoint["state_dict"], strict=strict)
    except RuntimeError as exc:  # shapes that differ
        from fulmen.checkpoint.fit import fit_error

        raise fit_error(path, trainer.module, checkpoint["state_dict"], exc,
                        strict=strict) from exc
    if stage != "fit":
        return None
    for callback in trainer.callbacks:
        state = checkpoint.get("callbacks", {}).get(callback.state_key)
        if state is not None:
            callback.load_state_dict(state)
        callback.on_load_checkpoint(trainer, trainer.module, checkpoint)
    for optimizer, state in zip(trainer.optimizers, checkpoint.get("optimizer_states", [])):
        trainer.strategy.load_optimizer_state(optimizer, state)
    for scheduler_config, state in zip(trainer.lr_scheduler_configs,
                                       checkpoint.get("lr_schedulers", [])):
        scheduler_config.scheduler.load_state_dict(state)
    trainer.strategy.precision.load_state_dict(checkpoint.get("precision", {}))
    trainer.logger_set.load_state_dict(checkpoint.get(STATE_KEY, {}))
    if trainer.datamodule is not None and "datamodule" in checkpoint:
        trainer.datamodule.load_state_dict(checkpoint["datamodule"])
    trainer.global_step = checkpoint["global_step"]
    trainer.current_epoch = checkpoint["epoch"]
    return checkpoint
