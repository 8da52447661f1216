"""Lightning's data helpers (``lightning.fabric.utilities.data`` and
``lightning.pytorch.utilities.data``): lengths of loaders, the batch size of a batch, and a
suggested number of dataloader workers."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any

from fulmen.errors import ConfigurationError
from fulmen.hparams import AttributeDict
from fulmen.utilities.rank_zero import WarningCache, rank_zero_warn

__all__ = ["AttributeDict", "extract_batch_size", "has_iterable_dataset", "has_len",
           "has_len_all_ranks", "sized_len", "suggested_max_num_workers"]

_warning_cache = WarningCache()
_ITERABLE_LEN = ("Your `IterableDataset` has `__len__` defined. In combination with multi-process "
                 "data loading (when num_workers > 1), `__len__` could be inaccurate if each "
                 "worker is not configured independently to avoid having duplicate data.")


def has_iterable_dataset(dataloader: object) -> bool:
    """Whether the loader's ``dataset`` is a ``torch.utils.data.IterableDataset``."""
    from torch.utils.data import IterableDataset

    return isinstance(getattr(dataloader, "dataset", None), IterableDataset)


def sized_len(dataloader: object) -> int | None:
    """``len(dataloader)``, or None when it has no length."""
    try:
        return len(dataloader)  # type: ignore[arg-type]
    except (TypeError, NotImplementedError):
        return None


def has_len(dataloader: object) -> bool:
    """Whether the loader has a length (warning when it is 0, or when an iterable dataset has
    one)."""
    length = sized_len(dataloader)
    if length == 0:
        rank_zero_warn(f"`{type(dataloader).__name__}` returned 0 length. Please make sure this "
                       "was your intention.")
    if length is not None and has_iterable_dataset(dataloader):
        rank_zero_warn(_ITERABLE_LEN)
    return length is not None


def has_len_all_ranks(dataloader: object, strategy: Any,
                      allow_zero_length_dataloader_with_multiple_devices: bool = False) -> bool:
    """Whether the loader has a length on every process (the lengths summed through
    ``strategy.reduce``); a loader empty here but not elsewhere is an error unless allowed."""
    import torch

    local_length = sized_len(dataloader)
    if local_length is None:
        return False
    total = strategy.reduce(torch.tensor(local_length, device=strategy.root_device),
                            reduce_op="sum")
    name = type(dataloader).__name__
    if total == 0:
        rank_zero_warn(f"Total length of `{name}` across ranks is zero. Please make sure this was "
                       "your intention.")
    if total > 0 and local_length == 0:
        if not allow_zero_length_dataloader_with_multiple_devices:
            raise RuntimeError(f"`{name}` within local rank has zero length. Please make sure that "
                               "it returns at least 1 batch.")
        rank_zero_warn(f"Total length of `{name}` across ranks is zero, but local rank has zero "
                       "length. Please be cautious of uneven batch length.")
    if has_iterable_dataset(dataloader):
        rank_zero_warn(_ITERABLE_LEN)
    return True


def _batch_sizes(batch: Any) -> Generator[int | None, None, None]:
    import torch

    if isinstance(batch, torch.Tensor):
        yield 1 if batch.ndim == 0 else batch.size(0)
    elif isinstance(batch, Iterable | Mapping) and not isinstance(batch, str):
        for sample in (batch.values() if isinstance(batch, Mapping) else batch):
            yield from _batch_sizes(sample)
    elif is_dataclass(batch) and not isinstance(batch, type):
        for field in fields(batch):
            yield from _batch_sizes(getattr(batch, field.name))
    else:
        yield None


def extract_batch_size(batch: Any) -> int:
    """The size of the first tensor found in ``batch`` (1 for a scalar tensor), warning when
    tensors disagree; an error when there is none."""
    message = ("We could not infer the batch_size from the batch. Either simplify its structure "
               "or provide the batch_size as `self.log(..., batch_size=batch_size)`.")
    found = None
    try:
        for size in _batch_sizes(batch):
            if found is None:
                found = size
            elif found != size:
                _warning_cache.warn("Trying to infer the `batch_size` from an ambiguous "
                                    f"collection. The batch size we found is {found}. To avoid "
                                    "any miscalculations, use `self.log(..., "
                                    "batch_size=batch_size)`.")
                break
    except RecursionError as exc:
        raise RecursionError(message) from exc
    if found is None:
        raise ConfigurationError(message)
    return found


def suggested_max_num_workers(local_world_size: int) -> int:
    """An upper bound for ``DataLoader(num_workers=)``: the CPUs available to this process,
    shared by the ``local_world_size`` processes of this machine, less one for the main
    process (at least 1)."""
    if local_world_size < 1:
        raise ValueError(f"`local_world_size` should be >= 1, got {local_world_size}.")
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on macOS and Windows
        cpus = os.cpu_count() or 1
    return max(1, cpus // local_world_size - 1)
