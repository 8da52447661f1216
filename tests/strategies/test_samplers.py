"""Distributed samplers, without processes: what each rank would get."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    WeightedRandomSampler,
)

from fulmen import ConfigurationError
from fulmen_strategies.samplers import UnrepeatedDistributedSampler, distribute

DATA = TensorDataset(torch.arange(10))


def indices(loader: DataLoader) -> list[int]:
    return [int(i) for (batch,) in loader for i in batch]


@pytest.mark.parametrize(("stage", "shuffle", "kind"), [
    ("lite", True, True), ("lite", False, False), ("val", True, True), ("val", False, False),
    # Lightning's Trainer shuffles its training data across ranks even when the loader did not
    ("train", True, True), ("train", False, True)])
def test_shuffle_follows_the_users_sampler(stage, shuffle, kind):
    loaders = [distribute(DataLoader(DATA, batch_size=2, shuffle=shuffle), stage, 2, r)
               for r in (0, 1)]
    assert all(isinstance(d.sampler, DistributedSampler) for d in loaders)
    assert loaders[0].sampler.shuffle is kind
    seen = [indices(d) for d in loaders]
    assert sorted(seen[0] + seen[1]) == list(range(10))
    assert set(seen[0]).isdisjoint(seen[1])


def test_set_epoch_reshuffles():
    loader = distribute(DataLoader(DATA, batch_size=10, shuffle=True), "train", 2, 0)
    first = indices(loader)
    loader.sampler.set_epoch(1)
    assert indices(loader) != first


def test_custom_samplers_are_sharded():
    weights = torch.ones(10)
    sampler = WeightedRandomSampler(weights, num_samples=10, generator=torch.Generator()
                                    .manual_seed(0))
    loaders = [distribute(DataLoader(DATA, batch_size=5, sampler=sampler), "train", 2, r)
               for r in (0, 1)]
    assert [len(indices(d)) for d in loaders] == [5, 5]


def test_predict_does_not_repeat_samples():
    loaders = [distribute(DataLoader(TensorDataset(torch.arange(7)), batch_size=2), "predict",
                          2, r) for r in (0, 1)]
    assert isinstance(loaders[0].sampler, UnrepeatedDistributedSampler)
    seen = [indices(d) for d in loaders]
    assert sorted(seen[0] + seen[1]) == list(range(7))


def test_loader_settings_survive_the_rebuild():
    collate = torch.utils.data.default_collate
    loader = DataLoader(DATA, batch_size=3, drop_last=True, collate_fn=collate)
    rebuilt = distribute(loader, "train", 2, 0)
    assert (rebuilt.batch_size, rebuilt.drop_last, rebuilt.collate_fn) == (3, True, collate)


def test_a_custom_batch_sampler_is_refused_with_the_way_out():
    class MyBatches(BatchSampler):
        pass

    loader = DataLoader(DATA, batch_sampler=MyBatches(SequentialSampler(DATA), 2, False))
    with pytest.raises(ConfigurationError, match=r"custom batch_sampler.*use_distributed_sampler="
                       r"False"):
        distribute(loader, "train", 2, 0)


def test_an_existing_distributed_sampler_is_kept():
    sampler = DistributedSampler(DATA, num_replicas=2, rank=1)
    loader = DataLoader(DATA, sampler=sampler)
    assert distribute(loader, "train", 2, 1) is loader
    assert isinstance(RandomSampler(DATA), RandomSampler)
