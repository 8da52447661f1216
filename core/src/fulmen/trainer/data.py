"""Finding the dataloaders of a stage and how many batches of each to run."""

from __future__ import annotations

import functools
import math
import os
from typing import Any

from fulmen.datamodule import DataModule
from fulmen.errors import ConfigurationError

METHODS = {"train": "train_dataloader", "val": "val_dataloader", "test": "test_dataloader",
           "predict": "predict_dataloader"}
#: Lightning's warning when a stage's dataloaders have no batch (it then skips them)
EMPTY_LOADERS = ("Total length of `DataLoader` across ranks is zero. Please make sure this was "
                 "your intention.")


def resolve(explicit: Any, datamodule: Any, module: Any, kind: str) -> list[Any]:
    """Loaders passed to the call, else the datamodule's, else the module's; [] if none."""
    source = explicit
    if source is None:
        for owner in (datamodule, module):
            method = getattr(owner, METHODS[kind], None) if owner is not None else None
            if method is None:
                continue
            try:
                source = method()
            except NotImplementedError:
                continue
            break
    if source is None:
        return []
    loaders = list(source) if isinstance(source, list | tuple) else [source]
    for loader in loaders:
        if not hasattr(loader, "__iter__"):
            raise ConfigurationError(f"the {kind} dataloader is a {type(loader).__name__}, which "
                                     "cannot be iterated; return a torch DataLoader")
    return loaders


def defined(explicit: Any, datamodule: Any, module: Any, kind: str) -> bool:
    """Whether :func:`resolve` has somewhere to look: loaders passed to the call, or a
    ``*_dataloader`` method the datamodule overrides or the module has (Lightning's
    ``_DataLoaderSource.is_defined``); the method is not called."""
    if explicit is not None:
        return True
    name = METHODS[kind]
    for owner in (datamodule, module):
        method = getattr(owner, name, None) if owner is not None else None
        if method is None:
            continue
        if owner is datamodule and name not in vars(owner) and \
                getattr(type(owner), name) is getattr(DataModule, name):
            continue  # DataModule's own, which raises NotImplementedError
        return True
    return False


def check_limit(flag: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (
            isinstance(value, float) and value > 1.0):
        raise ConfigurationError(f"Trainer({flag}={value!r}): give a number of batches (int >= 0)"
                                 " or a fraction of the dataloader (float in [0.0, 1.0])")
    return value


def num_batches(loader: Any, limit: Any, kind: str) -> int | float:
    """Batches to run from ``loader`` under ``limit`` (None: all); ``inf`` if unknown."""
    try:
        length: int | float = len(loader)
    except TypeError:
        length = math.inf
    if limit is None:
        return length
    if isinstance(limit, float):
        if length == math.inf:
            if limit in (0.0, 1.0):
                return 0 if limit == 0.0 else math.inf
            raise ConfigurationError(f"limit_{kind}_batches={limit} is a fraction, but the {kind}"
                                     " dataloader has no length; give a number of batches")
        return int(length * limit) if limit < 1.0 else length
    return min(limit, length)


def seed_workers(loader: Any, rank: int) -> None:
    """Give workers distinct seeds after ``seed_everything(workers=True)``."""
    if os.environ.get("FULMEN_SEED_WORKERS") != "1":
        return
    if getattr(loader, "num_workers", 0) and getattr(loader, "worker_init_fn", True) is None:
        from fulmen.seed import worker_init_fn

        loader.worker_init_fn = functools.partial(worker_init_fn, rank=rank)


def without_shuffle(loader: Any) -> Any:
    """``overfit_batches``: the same batches every epoch. A ``DataLoader`` that shuffles is
    rebuilt with a sequential sampler (with a warning, as Lightning)."""
    import warnings

    from torch.utils.data import DataLoader, RandomSampler

    if not isinstance(loader, DataLoader) or not isinstance(loader.sampler, RandomSampler) \
            or loader.batch_size is None:
        return loader
    warnings.warn("overfit_batches turns off the shuffling of the training dataloader",
                  stacklevel=3)
    return DataLoader(loader.dataset, batch_size=loader.batch_size, shuffle=False,
                      num_workers=loader.num_workers, collate_fn=loader.collate_fn,
                      pin_memory=loader.pin_memory, drop_last=loader.drop_last,
                      timeout=loader.timeout, worker_init_fn=loader.worker_init_fn,
                      persistent_workers=loader.persistent_workers)
