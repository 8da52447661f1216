"""Lightning's checkpoint migrations (``lightning.pytorch.utilities.migration``):
:func:`migrate_checkpoint` brings a Lightning checkpoint dict written by an older Lightning up
to the layout of the release fulmen follows (renamed callback keys, the 1.6 progress tracking,
the 2.0 loop structure), and :class:`pl_legacy_patch` lets ``torch.load`` unpickle checkpoints
of old Lightning releases (removed helpers, ``pytorch_lightning`` class paths)."""

from __future__ import annotations

import pickle
import re
import sys
import threading
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any

from packaging.version import Version

from fulmen.dropin.names import LIGHTNING_VERSION
from fulmen.utilities.enums import LightningEnum
from fulmen.utilities.rank_zero import rank_zero_warn
from fulmen.utilities.warnings import PossibleUserWarning

__all__ = ["migrate_checkpoint", "migration_index", "pl_legacy_patch"]

_Checkpoint = dict[str, Any]
_lock = threading.Lock()
VERSION_KEY = "pytorch-lightning_version"


def migrate_checkpoint(checkpoint: _Checkpoint, target_version: str | None = None
                       ) -> tuple[_Checkpoint, dict[str, list[str]]]:
    """Apply, in place, the migrations of every Lightning version above the checkpoint's (up to
    ``target_version`` when given); returns the checkpoint and ``{version: [migrations]}``. A
    checkpoint newer than the Lightning fulmen follows is left as it is, with a warning."""
    version = checkpoint[VERSION_KEY]
    if Version(version) > Version(LIGHTNING_VERSION):
        rank_zero_warn(f"The loaded checkpoint was produced with Lightning v{version}, which is "
                       f"newer than your current Lightning version: v{LIGHTNING_VERSION}",
                       category=PossibleUserWarning)
        return checkpoint, {}
    applied = {}
    for migration_version, functions in migration_index().items():
        target = Version(migration_version)
        if (target_version is not None and target > Version(target_version)) or \
                Version(checkpoint[VERSION_KEY]) >= target:
            continue
        for function in functions:
            checkpoint = function(checkpoint)
        applied[migration_version] = [f.__name__ for f in functions]
    if version != LIGHTNING_VERSION:
        checkpoint.setdefault("legacy_pytorch-lightning_version", version)
    checkpoint[VERSION_KEY] = LIGHTNING_VERSION
    return checkpoint, applied


def migration_index() -> dict[str, list[Callable[[_Checkpoint], _Checkpoint]]]:
    """Lightning version -> the migrations to it, applied in this order."""
    return {
        "0.10.0": [_migrate_model_checkpoint_early_stopping],
        "1.6.0": [_migrate_loop_global_step_to_progress_tracking,
                  _migrate_loop_current_epoch_to_progress_tracking],
        "1.6.5": [_migrate_loop_batches_that_stepped],
        "1.9.0": [_migrate_model_checkpoint_save_on_train_epoch_end_default],
        "2.0.0": [_drop_apex_amp_state, _migrate_loop_structure_after_tbptt_removal,
                  _migrate_loop_structure_after_optimizer_loop_removal,
                  _migrate_loop_structure_after_dataloader_loop_removal],
    }


def _migrate_model_checkpoint_early_stopping(checkpoint: _Checkpoint) -> _Checkpoint:
    """0.10.0: the checkpoint and early stopping keys moved into the callbacks' states."""
    from fulmen.callbacks import EarlyStopping, ModelCheckpoint

    mapping = {"checkpoint_callback_best_model_score": (ModelCheckpoint, "best_model_score"),
               "checkpoint_callback_best_model_path": (ModelCheckpoint, "best_model_path"),
               "checkpoint_callback_best": (ModelCheckpoint, "best_model_score"),
               "early_stop_callback_wait": (EarlyStopping, "wait_count"),
               "early_stop_callback_patience": (EarlyStopping, "patience")}
    checkpoint["callbacks"] = checkpoint.get("callbacks") or {}
    for key, (callback_type, callback_key) in mapping.items():
        if key in checkpoint:
            state = checkpoint["callbacks"].get(callback_type) or {}
            state[callback_key] = checkpoint.pop(key)
            checkpoint["callbacks"][callback_type] = state
    return checkpoint


def _progress(*fields: str) -> dict[str, dict[str, int]]:
    return {"current": dict.fromkeys(fields, 0), "total": dict.fromkeys(fields, 0)}


def _fit_loop_state_1_6_0() -> dict[str, Any]:
    batch = {**_progress("completed", "processed", "ready", "started"), "is_last_batch": False}
    return {
        "epoch_loop.batch_loop.manual_loop.optim_step_progress": _progress("completed", "ready"),
        "epoch_loop.batch_loop.manual_loop.state_dict": {},
        "epoch_loop.batch_loop.optimizer_loop.optim_progress": {
            "optimizer": {"step": _progress("completed", "ready"),
                          "zero_grad": _progress("completed", "ready", "started")},
            "optimizer_position": 0},
        "epoch_loop.batch_loop.optimizer_loop.state_dict": {},
        "epoch_loop.batch_loop.state_dict": {},
        "epoch_loop.batch_progress": dict(batch),
        "epoch_loop.scheduler_progress": _progress("completed", "ready"),
        "epoch_loop.state_dict": {"_batches_that_stepped": 0},
        "epoch_loop.val_loop.dataloader_progress": _progress("completed", "ready"),
        "epoch_loop.val_loop.epoch_loop.batch_progress": {
            **_progress("completed", "processed", "ready", "started"), "is_last_batch": False},
        "epoch_loop.val_loop.epoch_loop.state_dict": {},
        "epoch_loop.val_loop.state_dict": {},
        "epoch_progress": _progress("completed", "processed", "ready", "started"),
        "state_dict": {},
    }


def _fit_loop(checkpoint: _Checkpoint) -> dict[str, Any]:
    checkpoint.setdefault("loops", {"fit_loop": _fit_loop_state_1_6_0()})
    fit_loop: dict[str, Any] = checkpoint["loops"].setdefault("fit_loop", _fit_loop_state_1_6_0())
    return fit_loop


def _migrate_loop_global_step_to_progress_tracking(checkpoint: _Checkpoint) -> _Checkpoint:
    """1.6.0: ``global_step`` into the progress tracking of both optimization loops."""
    fit_loop, step = _fit_loop(checkpoint), checkpoint["global_step"]
    progress = fit_loop["epoch_loop.batch_loop.optimizer_loop.optim_progress"]
    progress["optimizer"]["step"]["total"]["completed"] = step
    fit_loop["epoch_loop.batch_loop.manual_loop.optim_step_progress"]["total"]["completed"] = step
    return checkpoint


def _migrate_loop_current_epoch_to_progress_tracking(checkpoint: _Checkpoint) -> _Checkpoint:
    """1.6.0: ``epoch`` into the fit loop's epoch progress."""
    _fit_loop(checkpoint)["epoch_progress"]["current"]["completed"] = checkpoint["epoch"]
    return checkpoint


def _migrate_loop_batches_that_stepped(checkpoint: _Checkpoint) -> _Checkpoint:
    """1.6.5: ``_batches_that_stepped`` defaults to ``global_step``."""
    state = checkpoint["loops"]["fit_loop"]["epoch_loop.state_dict"]
    state.setdefault("_batches_that_stepped", checkpoint["global_step"])
    return checkpoint


def _migrate_model_checkpoint_save_on_train_epoch_end_default(checkpoint: _Checkpoint
                                                              ) -> _Checkpoint:
    """1.9.0: ``save_on_train_epoch_end`` left ``ModelCheckpoint``'s state key."""
    if "callbacks" not in checkpoint:
        return checkpoint

    def new_key(old: str) -> str:
        if not old.startswith("ModelCheckpoint"):
            return old
        return re.sub(", 'save_on_train_epoch_end': (None|True|False)", "", old)

    states = {new_key(k): v for k, v in checkpoint["callbacks"].items() if isinstance(k, str)}
    if len(states) < len(checkpoint["callbacks"]):
        rank_zero_warn("You have multiple `ModelCheckpoint` callback states in this checkpoint, "
                       "but we found state keys that would end up colliding with each other "
                       "after an upgrade, which means we can't differentiate which of your "
                       "checkpoint callbacks needs which states. At least one of your "
                       "`ModelCheckpoint` callbacks will not be able to reload the state.",
                       category=PossibleUserWarning)
        return checkpoint
    checkpoint["callbacks"] = states
    return checkpoint


def _drop_apex_amp_state(checkpoint: _Checkpoint) -> _Checkpoint:
    """2.0.0: apex's AMP state is dropped."""
    if "amp_scaling_state" in checkpoint:
        rank_zero_warn("This checkpoint contains apex AMP data, but apex support has been removed "
                       "in v2.0.0.")
        del checkpoint["amp_scaling_state"]
    return checkpoint


def _fit_loop_of(checkpoint: _Checkpoint) -> dict[str, Any] | None:
    loop: dict[str, Any] | None = checkpoint.get("loops", {}).get("fit_loop")
    return loop


def _migrate_loop_structure_after_tbptt_removal(checkpoint: _Checkpoint) -> _Checkpoint:
    """2.0.0: the optimizer and manual loops moved from the batch loop to the epoch loop."""
    fit_loop = _fit_loop_of(checkpoint)
    if fit_loop is None:
        return checkpoint
    for name in ("manual_loop.optim_step_progress", "manual_loop.state_dict",
                 "optimizer_loop.optim_progress", "optimizer_loop.state_dict"):
        if f"epoch_loop.batch_loop.{name}" in fit_loop:
            fit_loop[f"epoch_loop.{name}"] = fit_loop.pop(f"epoch_loop.batch_loop.{name}")
    if fit_loop.get("epoch_loop.batch_loop.state_dict"):
        fit_loop["epoch_loop.state_dict"]["old_batch_loop_state_dict"] = \
            fit_loop["epoch_loop.batch_loop.state_dict"]
    fit_loop.pop("epoch_loop.batch_loop.state_dict", None)
    return checkpoint


def _migrate_loop_structure_after_optimizer_loop_removal(checkpoint: _Checkpoint) -> _Checkpoint:
    """2.0.0: no loop over optimizers any more; the sub-loops were renamed."""
    fit_loop = _fit_loop_of(checkpoint)
    if fit_loop is None:
        return checkpoint
    if "epoch_loop.optimizer_loop.optim_progress" in fit_loop:
        fit_loop["epoch_loop.optimizer_loop.optim_progress"].pop("optimizer_position", None)
    if "epoch_loop.optimizer_loop.state_dict" in fit_loop:
        fit_loop["epoch_loop.automatic_optimization.state_dict"] = \
            fit_loop.pop("epoch_loop.optimizer_loop.state_dict")
        fit_loop["epoch_loop.automatic_optimization.optim_progress"] = \
            fit_loop.pop("epoch_loop.optimizer_loop.optim_progress")
    if "epoch_loop.manual_loop.state_dict" in fit_loop:
        fit_loop["epoch_loop.manual_optimization.state_dict"] = \
            fit_loop.pop("epoch_loop.manual_loop.state_dict")
        fit_loop["epoch_loop.manual_optimization.optim_step_progress"] = \
            fit_loop.pop("epoch_loop.manual_loop.optim_step_progress")
    return checkpoint


def _migrate_loop_structure_after_dataloader_loop_removal(checkpoint: _Checkpoint
                                                          ) -> _Checkpoint:
    """2.0.0: the evaluation and prediction dataloader loops were flattened."""
    loops = checkpoint.get("loops")
    if loops is None:
        return checkpoint
    for key in ("predict_loop", "validate_loop", "test_loop"):
        if key not in loops:
            continue
        loop = loops[key]
        loop.pop("dataloader_progress", None)
        loop.update({k[len("epoch_loop."):]: loop.pop(k) for k in list(loop)
                     if k.startswith("epoch_loop.")})
    return checkpoint


class _FaultTolerantMode(LightningEnum):
    """An enum Lightning removed in 2.0 that old checkpoints pickled."""

    DISABLED = "disabled"
    AUTOMATIC = "automatic"
    MANUAL = "manual"


class _RedirectingUnpickler(pickle.Unpickler):
    """Reads ``pytorch_lightning.X`` class paths as ``lightning.pytorch.X``."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("pytorch_lightning"):
            module = "lightning.pytorch" + module[len("pytorch_lightning"):]
        return super().find_class(module, name)


class pl_legacy_patch:
    """Inside, ``torch.load`` (``weights_only=False``) reads checkpoints of old Lightning
    releases: ``lightning.pytorch.utilities.argparse_utils`` (removed in 1.4) exists again with
    ``_gpus_arg_default``, ``_FaultTolerantMode`` (removed in 2.0) is back on the loaded
    ``utilities.enums`` module, and ``pytorch_lightning`` class paths load from
    ``lightning.pytorch``."""

    def __enter__(self) -> pl_legacy_patch:
        _lock.acquire()
        legacy = ModuleType("lightning.pytorch.utilities.argparse_utils")
        legacy._gpus_arg_default = lambda x: x  # type: ignore[attr-defined]
        self._modules = [n for n in ("lightning.pytorch.utilities.argparse_utils",
                                     "pytorch_lightning.utilities.argparse_utils")
                         if n not in sys.modules]
        for name in self._modules:
            sys.modules[name] = legacy
        self._attributes: list[tuple[ModuleType, str]] = []
        for root in ("lightning.pytorch", "pytorch_lightning"):
            for module_name, attribute, value in (
                    ("utilities.argparse", "_gpus_arg_default", legacy._gpus_arg_default),
                    ("utilities.enums", "_FaultTolerantMode", _FaultTolerantMode)):
                module = sys.modules.get(f"{root}.{module_name}")
                if module is not None and attribute not in vars(module):
                    setattr(module, attribute, value)
                    self._attributes.append((module, attribute))
        self._old_unpickler = pickle.Unpickler
        pickle.Unpickler = _RedirectingUnpickler  # type: ignore[misc]
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for module, attribute in self._attributes:
            delattr(module, attribute)
        for name in self._modules:
            sys.modules.pop(name, None)
        pickle.Unpickler = self._old_unpickler  # type: ignore[misc]
        _lock.release()
