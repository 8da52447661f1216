"""Manual optimization (``manual_backward`` + ``opt.step()``) under real 2-process data
parallelism: ddp, and (``slow``) fsdp, deepspeed and ddp_sharded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from processes import script_runner

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("strategy", ["ddp", *(
    pytest.param(s, marks=pytest.mark.slow) for s in ("fsdp", "deepspeed", "ddp_sharded"))])
def test_manual_optimization_averages_gradients(tmp_path: Path, strategy: str) -> None:
    """Each rank trains on different data; both end with the same weights, equal to one process
    that averages the two ranks' losses (what DDP's gradient averaging computes)."""
    run = script_runner(tmp_path, Path(__file__).parent / "scripts", 150)
    env = {"OMP_NUM_THREADS": "1"}
    ddp = run("manual_ddp.py", "--strategy", strategy, env=env)
    assert ddp.returncode == 0, ddp.output[-3000:]
    single = run("manual_ddp.py", "--strategy", "single_device", env=env)
    assert single.returncode == 0, single.output[-3000:]
    r0, r1, ref = ddp.json("rank0"), ddp.json("rank1"), single.json("rank0")
    assert r0["global_step"] == r1["global_step"] == 4
    for a, b, c in zip(r0["weights"], r1["weights"], ref["weights"]):
        assert torch.equal(torch.tensor(a), torch.tensor(b))
        assert torch.allclose(torch.tensor(a), torch.tensor(c), atol=1e-6)
