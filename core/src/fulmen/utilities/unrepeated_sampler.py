"""Lightning's ``UnrepeatedDistributedSamplerWrapper``: shards the indices of the user's own
sampler across processes without padding (evaluation and prediction see each sample once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import Dataset, Sampler

from fulmen_strategies.samplers import UnrepeatedDistributedSampler

__all__ = ["UnrepeatedDistributedSampler", "UnrepeatedDistributedSamplerWrapper"]


class _SamplerIndices(Dataset):
    """The indices a sampler yields, as a dataset (read again at each epoch)."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self.indices: list[Any] | None = None

    def __getitem__(self, position: int) -> Any:
        if self.indices is None:
            self.indices = list(self.sampler)
        return self.indices[position]

    def __len__(self) -> int:
        return len(self.sampler)  # type: ignore[arg-type]

    def reset(self) -> None:
        self.indices = None


class UnrepeatedDistributedSamplerWrapper(UnrepeatedDistributedSampler):
    """``UnrepeatedDistributedSampler`` over the indices ``sampler`` yields."""

    def __init__(self, sampler: Sampler, *args: Any, **kwargs: Any) -> None:
        self.source = _SamplerIndices(sampler)
        super().__init__(self.source, *args, **kwargs)

    def __iter__(self) -> Iterator[Any]:
        self.source.reset()
        return (self.source[i] for i in super().__iter__())
