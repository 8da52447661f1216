"""``FSDPStrategy(sharding_strategy=...)``: Lightning's names map onto FSDP2 meshes and
``reshard_after_forward``. The 2-node HSDP run is in tests/integration/test_cluster_runs.py."""

from __future__ import annotations

import pytest

import fulmen
from fulmen import ConfigurationError


def fsdp(**kwargs):
    from fulmen_strategies import FSDPStrategy

    return FSDPStrategy(**kwargs)


@pytest.mark.parametrize(("sharding", "shape", "reshard"), [
    ("FULL_SHARD", (4,), True), ("SHARD_GRAD_OP", (4,), False),
    ("HYBRID_SHARD", (2, 2), True), ("_HYBRID_SHARD_ZERO2", (2, 2), False),
    ("NO_SHARD", (4, 1), False)])
def test_sharding_strategies_choose_mesh_and_resharding(sharding, shape, reshard):
    lite = fulmen.Lite(accelerator="cpu", devices=2, num_nodes=2,
                       strategy=fsdp(sharding_strategy=sharding))
    assert lite.strategy.sharding_mesh_shape() == shape
    assert lite.strategy.reshard_after_forward is reshard


def test_torch_sharding_strategy_members_are_accepted():
    from torch.distributed.fsdp import ShardingStrategy

    assert fsdp(sharding_strategy=ShardingStrategy.HYBRID_SHARD).sharding_strategy == \
        "HYBRID_SHARD"


def test_unknown_or_contradicting_settings_are_refused():
    with pytest.raises(ConfigurationError, match=r"sharding_strategy='HYBRID'.*'HYBRID_SHARD'"):
        fsdp(sharding_strategy="HYBRID")
    with pytest.raises(ConfigurationError, match="'SHARD_GRAD_OP' means "
                                                 "reshard_after_forward=False; give one"):
        fsdp(sharding_strategy="SHARD_GRAD_OP", reshard_after_forward=True)
    assert fsdp(reshard_after_forward=True).reshard_after_forward is True
