"""Seed 002's Lite example on 2 CPU processes: ddp (script re-run), ddp_spawn, fsdp."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.mark.parametrize("strategy", ["ddp", "ddp_spawn", "fsdp"])
def test_the_seed_example_scales(run_script, strategy):
    run = run_script("lite_train.py", "--strategy", strategy, timeout=150)
    assert run.returncode == 0, run.stderr
    r0, r1 = run.json("rank0"), run.json("rank1")
    assert (r0["world_size"], r1["world_size"]) == (2, 2)
    assert sorted(r0["seen"][:16] + r1["seen"][:16]) == list(range(32))  # sharded
    assert r0["weights"] == r1["weights"]  # gradients synchronised
    assert r0["gathered"] == [0.0, 1.0] and r0["mean"] == 0.5
    assert r1["shared"] == {"from": 0}
    assert r0["restored_equal"] and r1["restored_equal"]
    assert set(r0["rest"]) == {"optimizer", "step"} and r0["rest"]["step"] == 16
    assert run.stdout.count("printed once") == 1
    assert run.json("main")["returned_rank"] == 0
