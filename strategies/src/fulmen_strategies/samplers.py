"""Distributed samplers: each rank sees its own share of the data, every epoch differently."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
)

from fulmen import ConfigurationError

_warned_iterable = {"done": False}


class UnrepeatedDistributedSampler(DistributedSampler):
    """Shards without padding, so no sample is predicted twice (shards may differ by one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.total_size = len(self.dataset)  # type: ignore[arg-type]
        self.num_samples = len(range(self.rank, self.total_size, self.num_replicas))

    def __iter__(self) -> Iterator[int]:
        indices = list(range(self.total_size))
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            indices = torch.randperm(self.total_size, generator=g).tolist()
        return iter(indices[self.rank:self.total_size:self.num_replicas])


class _SamplerAsDataset(Dataset):
    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self._indices: list[int] | None = None

    def __getitem__(self, i: int) -> int:
        if self._indices is None:
            self._indices = list(self.sampler)
        return self._indices[i]

    def __len__(self) -> int:
        return len(self.sampler)  # type: ignore[arg-type]

    def reset(self) -> None:
        self._indices = None


class DistributedSamplerWrapper(DistributedSampler):
    """Shards the output of the user's own sampler (weighted, bucketing...) across ranks."""

    def __init__(self, sampler: Sampler, **kwargs: Any) -> None:
        super().__init__(_SamplerAsDataset(sampler), **kwargs)

    def __iter__(self) -> Iterator[int]:
        self.dataset.reset()  # type: ignore[attr-defined]
        return (self.dataset[i] for i in super().__iter__())


def process(loader: Any, stage: str, use_distributed_sampler: bool, strategy: Any) -> Any:
    """What a multi-process strategy's ``process_dataloader`` does: shard for the strategy's
    rank when asked and distributed, else leave the loader alone."""
    if not use_distributed_sampler or not strategy.distributed:
        return loader
    return distribute(loader, stage, strategy.world_size, strategy.global_rank,
                      agreed_seed(loader, strategy))


def agreed_seed(loader: Any, strategy: Any) -> int | None:
    """Rank zero's global seed, for the distributed sampler of ``loader`` (None when it gets
    none): every replica must shuffle with the same seed, or the shards overlap, also when each
    rank seeded itself differently (``seed_everything(seed + rank)``). One broadcast, when the
    loader is set up; every rank sets up its loaders."""
    if not isinstance(loader, DataLoader) or isinstance(loader.dataset, IterableDataset) or \
            isinstance(loader.sampler, DistributedSampler):
        return None
    return int(strategy.broadcast(int(os.environ.get("FULMEN_GLOBAL_SEED", 0)), 0))


def distribute(loader: Any, stage: str, num_replicas: int, rank: int,
               seed: int | None = None) -> Any:
    """A copy of ``loader`` whose sampler gives this rank its shard, shuffled with ``seed``
    (default: the global seed, ``FULMEN_GLOBAL_SEED``), which must be the same on every rank.
    As in Lightning, the Trainer's training data (``stage="train"``) is always shuffled, also
    when the loader was not (and the indices of a custom sampler too); evaluation data and
    ``Lite.setup_dataloaders`` (``stage="lite"``, as Fabric) are shuffled when the loader's
    sampler is a ``RandomSampler``."""
    if not isinstance(loader, DataLoader):
        return loader
    if isinstance(loader.dataset, IterableDataset):
        if not _warned_iterable["done"]:
            _warned_iterable["done"] = True
            warnings.warn("an IterableDataset is left as it is under a distributed strategy: "
                          "shard it yourself (e.g. by torch.distributed.get_rank()) or every "
                          "rank sees the same data", stacklevel=3)
        return loader
    if isinstance(loader.sampler, DistributedSampler):
        return loader
    batch_sampler = loader.batch_sampler
    if batch_sampler is not None and type(batch_sampler) is not BatchSampler:
        raise ConfigurationError(
            f"the {stage} dataloader uses a custom batch_sampler ({type(batch_sampler).__name__})"
            ", which fulmen cannot shard across processes. Shard it yourself and pass "
            "use_distributed_sampler=False, or use a sampler instead of a batch_sampler")
    inner = loader.sampler
    if seed is None:
        seed = int(os.environ.get("FULMEN_GLOBAL_SEED", 0))
    options: dict[str, Any] = {"num_replicas": num_replicas, "rank": rank, "seed": seed}
    sampler: Any
    if stage == "predict":
        sampler = UnrepeatedDistributedSampler(loader.dataset, shuffle=False, **options)
    elif isinstance(inner, RandomSampler | SequentialSampler):
        sampler = DistributedSampler(
            loader.dataset, shuffle=stage == "train" or isinstance(inner, RandomSampler),
            **options)
    else:
        sampler = DistributedSamplerWrapper(inner, shuffle=stage == "train",  # type: ignore[arg-type]
                                            **options)
    return rebuild(loader, sampler)


def rebuild(loader: DataLoader, sampler: Sampler) -> DataLoader:
    """The same dataloader with another sampler."""
    kwargs: dict[str, Any] = {
        "batch_size": loader.batch_size, "sampler": sampler, "num_workers": loader.num_workers,
        "collate_fn": loader.collate_fn, "pin_memory": loader.pin_memory,
        "drop_last": loader.drop_last, "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context,
        "generator": loader.generator, "persistent_workers": loader.persistent_workers,
        "pin_memory_device": loader.pin_memory_device,
    }
    if loader.num_workers:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    try:
        return type(loader)(loader.dataset, **kwargs)
    except TypeError as exc:
        raise ConfigurationError(
            f"{type(loader).__name__} could not be rebuilt with a distributed sampler ({exc}). "
            "Give it a DistributedSampler yourself and pass use_distributed_sampler=False"
        ) from exc


def shard_size(n: int, num_replicas: int) -> int:
    return math.ceil(n / num_replicas)
