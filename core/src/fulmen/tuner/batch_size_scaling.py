"""Finding the largest batch size that fits (Lightning's ``scale_batch_size``): run a few
steps per candidate size (``Trainer.run_trial``), doubling until an out-of-memory error, then
optionally bisecting. The size lives in an attribute the data methods read (``batch_size`` on
the module, its hparams or the datamodule)."""

from __future__ import annotations

import gc
import logging
from typing import Any

import torch

from fulmen.errors import ConfigurationError
from fulmen.tuner import attributes
from fulmen.utilities.rank_zero import rank_zero_info, rank_zero_warn

log = logging.getLogger("fulmen")
MODES = ("power", "binsearch")
DATA_METHODS = {"fit": "train_dataloader", "validate": "val_dataloader",
                "test": "test_dataloader", "predict": "predict_dataloader"}
_OOM_MESSAGES = ("CUDA out of memory.", "CUDA error: out of memory",
                 "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",
                 "DefaultCPUAllocator: can't allocate memory")


def is_oom_error(exception: BaseException) -> bool:
    """An out-of-memory error: ``torch.OutOfMemoryError`` or a RuntimeError whose message says
    so (CUDA, cuDNN, the CPU allocator)."""
    if isinstance(exception, torch.OutOfMemoryError):
        return True
    return isinstance(exception, RuntimeError) and len(exception.args) == 1 and any(
        m in str(exception.args[0]) for m in _OOM_MESSAGES)


def garbage_collection_cuda() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def check_arguments(mode: Any, steps_per_trial: Any, init_val: Any, max_trials: Any,
                    margin: Any, max_val: Any, owner: str = "scale_batch_size") -> None:
    given = (f"{owner}(mode={mode!r}, steps_per_trial={steps_per_trial!r}, "
             f"init_val={init_val!r}, max_trials={max_trials!r}, margin={margin!r}, "
             f"max_val={max_val!r})")
    if mode not in MODES:
        raise ConfigurationError(f"{given}: `mode` should be either of {MODES}")
    for name, value, least in (("steps_per_trial", steps_per_trial, 1), ("init_val", init_val, 1),
                               ("max_trials", max_trials, 0), ("max_val", max_val, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigurationError(f"{given}: {name} must be an int >= {least}")
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1:
        raise ConfigurationError(f"{given}: `margin` should be between 0 and 1 (a fraction the "
                                 "found size is reduced by in binsearch mode)")


def scale_batch_size(trainer: Any, mode: str = "power", steps_per_trial: int = 3,
                     init_val: int = 2, max_trials: int = 25, batch_arg_name: str = "batch_size",
                     margin: float = 0.05, max_val: int = 8192) -> int | None:
    """Search now (inside a stage, e.g. from ``on_fit_start``); returns the size found, which
    is also left in ``batch_arg_name``."""
    check_arguments(mode, steps_per_trial, init_val, max_trials, margin, max_val)
    if trainer.fast_dev_run:
        rank_zero_warn("Skipping batch size scaler since `fast_dev_run` is enabled.")
        return None
    new_size, _ = adjust_batch_size(trainer, batch_arg_name, value=init_val)
    if mode == "power":
        new_size = _run_power_scaling(trainer, new_size, batch_arg_name, steps_per_trial,
                                      max_trials, max_val)
    else:
        new_size = _run_binsearch_scaling(trainer, new_size, batch_arg_name, steps_per_trial,
                                          max_trials, margin, max_val)
    garbage_collection_cuda()
    log.info("Finished batch size finder, will continue with full run using batch size %d",
             new_size)
    return new_size


def _below_max(size: int, max_val: int) -> bool:
    if size >= max_val:
        rank_zero_info(f"Reached the maximum batch size limit of {max_val}. Stopping search.")
        return False
    return True


def _trial_fits(trainer: Any, steps: int) -> bool:
    """Run one trial; False when it ran out of memory (any other error propagates)."""
    garbage_collection_cuda()
    try:
        trainer.run_trial(steps)
    except RuntimeError as exception:
        if not is_oom_error(exception):
            raise
        garbage_collection_cuda()
        return False
    return True


def _run_power_scaling(trainer: Any, new_size: int, name: str, steps: int, max_trials: int,
                       max_val: int) -> int:
    """Double the size until a trial runs out of memory (then halve it once)."""
    any_success = False
    last_successful_size = new_size
    for i in range(max_trials):
        if not _below_max(new_size, max_val):
            break
        if not _trial_fits(trainer, steps):
            new_size, _ = adjust_batch_size(trainer, name, factor=0.5, desc="failed")
            if any_success:
                break
            continue
        last_successful_size = new_size
        if i + 1 >= max_trials:
            new_size = last_successful_size
            break
        new_size, changed = adjust_batch_size(trainer, name, factor=2.0, desc="succeeded",
                                              max_val=max_val)
        if not changed:
            break
        any_success = True
    return new_size


def _run_binsearch_scaling(trainer: Any, new_size: int, name: str, steps: int, max_trials: int,
                           margin: float, max_val: int) -> int:
    """Double until out of memory, then bisect between the last success and the failure."""
    low, high, count = 1, None, 0
    last_successful_size = new_size
    while True:
        if not _below_max(new_size, max_val):
            break
        if not _trial_fits(trainer, steps):
            high = new_size
            new_size, _ = adjust_batch_size(trainer, name, value=(high + low) // 2, desc="failed")
            if high - low <= 1:
                break
            continue
        last_successful_size = new_size
        count += 1
        if count >= max_trials:
            new_size = last_successful_size
            break
        low = new_size
        if high:
            if high - low <= 1:
                break
            new_size, changed = adjust_batch_size(trainer, name, value=(high + low) // 2,
                                                  desc="succeeded", max_val=max_val)
        else:
            new_size, changed = adjust_batch_size(trainer, name, factor=2.0, desc="succeeded",
                                                  max_val=max_val)
        if not changed:
            break
    if margin > 0:
        reduced = max(1, int(new_size * (1 - margin)))
        if reduced != new_size:
            rank_zero_info(f"Applying margin of {margin:.1%}, reducing batch size from "
                           f"{new_size} to {reduced}")
            new_size = reduced
            attributes.set_(trainer.lightning_module, trainer.datamodule, name, new_size)
    return new_size


def dataset_length(trainer: Any) -> int | None:
    """Length of the running stage's dataset, from the module's or datamodule's data method;
    None when unknown (an iterable dataset)."""
    from fulmen.datamodule import DataModule

    method = DATA_METHODS[trainer.state.fn]
    datamodule = trainer.datamodule
    owner = datamodule if datamodule is not None and \
        getattr(type(datamodule), method) is not getattr(DataModule, method) \
        else trainer.lightning_module
    loader = getattr(owner, method)()
    try:
        return len(loader.dataset)
    except (TypeError, AttributeError, NotImplementedError):
        return None


def adjust_batch_size(trainer: Any, batch_arg_name: str = "batch_size", factor: float = 1.0,
                      value: int | None = None, desc: str | None = None,
                      max_val: int = 8192) -> tuple[int, bool]:
    """Set the batch size to ``value`` or ``factor`` x the current one (capped at ``max_val``,
    never beyond the dataset's length); returns it and whether it changed."""
    module, datamodule = trainer.lightning_module, trainer.datamodule
    batch_size = attributes.get(module, datamodule, batch_arg_name)
    length = dataset_length(trainer)
    if length is not None and batch_size >= length:
        rank_zero_info(f"The batch size {batch_size} is greater or equal than the length of "
                       f"your dataset: {length}.")
        return batch_size, False
    new_size = value if value is not None else int(batch_size * factor)
    if new_size > max_val:
        if desc:
            rank_zero_info(f"Batch size {new_size} exceeds max_val limit {max_val}, capping at "
                           f"{max_val}")
        new_size = max_val
    if desc:
        rank_zero_info(f"Batch size {batch_size} {desc}, trying batch size {new_size}")
    attributes.set_(module, datamodule, batch_arg_name, new_size)
    return new_size, new_size != batch_size
