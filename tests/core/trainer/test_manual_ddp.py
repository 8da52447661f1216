"""Manual optimization (``manual_backward`` + ``opt.step()``) under real 2-process data
parallelism: ddp, and (``slow``) ddp_spawn, deepspeed and ddp_sharded (fsdp refuses it, see
the last test); with gradient accumulation through ``opt.toggle_model(sync_grad=...)`` (the
strategy's no-sync; DeepSpeed ZeRO-2 accumulates inside its engine instead)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from processes import script_runner

pytestmark = pytest.mark.timeout(240)

_SLOW = pytest.mark.slow


def _run(tmp_path: Path, strategy: str, accumulate: int) -> None:
    run = script_runner(tmp_path, Path(__file__).parent / "scripts", 200)
    env = {"OMP_NUM_THREADS": "1"}
    extra = ("--accumulate", str(accumulate))
    ddp = run("manual_ddp.py", "--strategy", strategy, *extra, env=env)
    assert ddp.returncode == 0, ddp.output[-3000:]
    single = run("manual_ddp.py", "--strategy", "single_device", *extra, env=env)
    assert single.returncode == 0, single.output[-3000:]
    r0, r1, ref = ddp.json("rank0"), ddp.json("rank1"), single.json("rank0")
    assert r0["global_step"] == r1["global_step"] == ref["global_step"] == 4 // accumulate
    for a, b, c in zip(r0["weights"], r1["weights"], ref["weights"]):
        assert torch.equal(torch.tensor(a), torch.tensor(b))
        assert torch.allclose(torch.tensor(a), torch.tensor(c), atol=1e-6)


@pytest.mark.parametrize("strategy", ["ddp", *(
    pytest.param(s, marks=_SLOW) for s in ("ddp_spawn", "deepspeed", "ddp_sharded"))])
def test_manual_optimization_averages_gradients(tmp_path: Path, strategy: str) -> None:
    """Each rank trains on different data; both end with the same weights, equal to one process
    that averages the two ranks' losses (what DDP's gradient averaging computes)."""
    _run(tmp_path, strategy, accumulate=1)


@pytest.mark.parametrize("strategy", [
    pytest.param(s, marks=_SLOW) for s in ("ddp", "ddp_spawn", "deepspeed", "ddp_sharded")])
def test_manual_accumulation_without_sync(tmp_path: Path, strategy: str) -> None:
    """Backward every batch, step every second one, the first backward of each pair without
    gradient reduction: the same weights as one process accumulating both ranks' batches."""
    _run(tmp_path, strategy, accumulate=2)


@_SLOW
def test_manual_optimization_under_fsdp_is_refused_not_wrong(tmp_path: Path) -> None:
    """Known gap: under fsdp (FSDP2) a backward inside training_step runs before FSDP2 sets up
    its reduce-scatter, so the ranks would end equal but not averaged. It is refused, naming
    the strategies that work, instead of training wrongly."""
    run = script_runner(tmp_path, Path(__file__).parent / "scripts", 200)
    result = run("manual_ddp.py", "--strategy", "fsdp", env={"OMP_NUM_THREADS": "1"})
    assert result.returncode != 0
    assert "manual optimization (manual_backward inside training_step) is not supported with " \
        "strategy='fsdp' yet" in result.output
