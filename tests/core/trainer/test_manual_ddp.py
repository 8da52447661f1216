"""Manual optimization (``manual_backward`` + ``opt.step()``) under real 2-process data
parallelism: ddp and fsdp (FSDP2), and (``slow``) ddp_spawn, deepspeed and ddp_sharded; with
gradient accumulation through ``opt.toggle_model(sync_grad=...)`` (the strategy's no-sync;
DeepSpeed ZeRO-2 accumulates inside its engine instead); and (``slow``) a GAN-like model with
two optimizers, ``toggle_optimizer`` and ``clip_gradients``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from processes import script_runner

pytestmark = pytest.mark.timeout(240)

_SLOW = pytest.mark.slow


def _run(tmp_path: Path, strategy: str, accumulate: int = 1, model: str = "linear",
         steps: int = 4) -> dict:
    run = script_runner(tmp_path, Path(__file__).parent / "scripts", 200)
    env = {"OMP_NUM_THREADS": "1"}
    extra = ("--accumulate", str(accumulate), "--model", model)
    ddp = run("manual_ddp.py", "--strategy", strategy, *extra, env=env)
    assert ddp.returncode == 0, ddp.output[-3000:]
    single = run("manual_ddp.py", "--strategy", "single_device", *extra, env=env)
    assert single.returncode == 0, single.output[-3000:]
    r0, r1, ref = ddp.json("rank0"), ddp.json("rank1"), single.json("rank0")
    assert r0["global_step"] == r1["global_step"] == ref["global_step"] == steps
    for a, b, c in zip(r0["weights"], r1["weights"], ref["weights"], strict=True):
        assert torch.equal(torch.tensor(a), torch.tensor(b))
        assert torch.allclose(torch.tensor(a), torch.tensor(c), atol=1e-6)
    return r0["collectives"]


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", *(
    pytest.param(s, marks=_SLOW) for s in ("ddp_spawn", "deepspeed", "ddp_sharded"))])
def test_manual_optimization_averages_gradients(tmp_path: Path, strategy: str) -> None:
    """Each rank trains on different data; both end with the same weights, equal to one process
    that averages the two ranks' losses (what DDP's gradient averaging computes)."""
    collectives = _run(tmp_path, strategy)
    if strategy == "fsdp":  # what automatic optimization costs: per step, an all-gather for
        # the forward and one for the backward (resharded after forward), one reduce-scatter
        assert collectives == {"all_gather": 8, "reduce_scatter": 4}


@pytest.mark.parametrize("strategy", [
    pytest.param(s, marks=_SLOW) for s in ("ddp", "ddp_spawn", "deepspeed", "ddp_sharded",
                                           "fsdp")])
def test_manual_accumulation_without_sync(tmp_path: Path, strategy: str) -> None:
    """Backward every batch, step every second one, the first backward of each pair without
    gradient reduction: the same weights as one process accumulating both ranks' batches."""
    collectives = _run(tmp_path, strategy, accumulate=2, steps=2)
    if strategy == "fsdp":  # one reduce-scatter per step, none for the unsynced backwards
        assert collectives["reduce_scatter"] == 2


@_SLOW
@pytest.mark.parametrize("strategy", ["ddp_find_unused_parameters_true", "fsdp", "fsdp_units"])
def test_manual_toggle_optimizer_gan(tmp_path: Path, strategy: str) -> None:
    """Two optimizers stepped in turn, each ``toggle_optimizer``-ed (a gradient leaking into
    the other's parameters would be stepped), the discriminator's gradients clipped by norm, its
    loss through the generator stepped just before: the single-process weights. ``fsdp`` gathers
    the parameters again after each step; ``fsdp_units`` shards every Linear on its own."""
    collectives = _run(tmp_path, strategy, model="gan", steps=8)
    if strategy == "fsdp":  # per step, two forwards and two backwards, two reduce-scatters
        assert collectives == {"all_gather": 16, "reduce_scatter": 8}
