"""Lite with ddp_sharded: setup returns wrappers whose step goes through OSS; the result equals
one process training on both ranks' rows; save consolidates, load resumes exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent / "scripts"))
from sharded_lite import data, make_net

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def reference(steps: int) -> list[list[float]]:
    """One process, batch = both ranks' rows: what averaged gradients must reproduce."""
    net = make_net()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
    x, y = data()
    for step in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(net(x[step * 8:step * 8 + 8]), y[step * 8:step * 8 + 8]).backward()
        optimizer.step()
    return [v.flatten().tolist() for v in net.state_dict().values()]


def close(a: list[list[float]], b: list[list[float]]) -> bool:
    return len(a) == len(b) and all(torch.allclose(torch.tensor(u), torch.tensor(v), atol=1e-5)
                                    for u, v in zip(a, b))


def test_lite_with_ddp_sharded_trains_saves_and_resumes(run_script):
    run = run_script("sharded_lite.py")
    assert run.returncode == 0, run.stderr
    rank0, rank1 = run.json("rank0"), run.json("rank1")
    assert rank0["optimizer_type"] == "OSS"
    assert close(rank0["after4"], reference(4)) and close(rank0["after8"], reference(8))
    assert rank0["after8"] == rank1["after8"]
    assert rank0["resumed8"] == rank0["after8"] and rank1["resumed8"] == rank1["after8"]
    assert rank0["rest"] == {"step": 4}
    saved = torch.load(run.out / "lite.ckpt", weights_only=True)
    assert sorted(saved["optimizer"]["state"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert int(saved["optimizer"]["state"]["2.bias"]["step"]) == 4  # keyed by name: canonical
