"""One Trainer, many calls: fit, validate, test, predict and fit again on the same module, on two
processes. The strategy sets the module up once (FSDP refuses a second ``fully_shard``; DDP
would wrap its wrapper), and the second fit continues from the first; DeepSpeed and sharded DDP
build a new engine / reducer for the second fit's optimizer and retire the old one's gradient
hooks. The second fit's weights must equal those of one fit of two epochs."""

from __future__ import annotations

import pytest
from test_ddp import weights_equal

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("strategy", ["fsdp", *(
    pytest.param(s, marks=pytest.mark.slow) for s in ("ddp", "deepspeed", "ddp_sharded"))])
def test_every_stage_on_one_trainer_sets_the_module_up_once(run_script, strategy):
    run = run_script("stages.py", "--strategy", strategy, env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.output
    ranks = [run.json(f"rank{r}") for r in (0, 1)]
    for rank in ranks:
        assert rank["stages"] == ["fit", "validate", "test", "predict", "fit"]
        assert len(set(rank["models"])) == 1, rank["models"]  # the same wrapped model each time
        assert rank["steps"] == [4, 8]  # 32 samples / (batch 4 x 2 ranks) per epoch
        assert rank["predictions"] == 4
    if strategy == "fsdp":  # sharded once: FSDP2 renames each sharded class once
        assert ranks[0]["classes"] == ["FSDPLinear", "FSDPPredicting", "Sequential", "Tanh"]
    weights = [[v for _, v in sorted(r["weights"].items())] for r in ranks]
    assert weights_equal(weights[0], weights[1], atol=0)
    if strategy in ("deepspeed", "ddp_sharded"):  # the second fit still averages gradients
        straight = run_script("stages.py", "--strategy", "ddp", "--straight",
                              env={"OMP_NUM_THREADS": "1"})
        assert straight.returncode == 0, straight.output
        reference = [v for _, v in sorted(straight.json("rank0")["weights"].items())]
        assert weights_equal(weights[0], reference, atol=1e-5)


@pytest.mark.parametrize("strategy", ["ddp", pytest.param("fsdp", marks=pytest.mark.slow)])
def test_compiled_training_on_two_processes_matches_eager(run_script, strategy):
    """``Trainer(compile=...)`` compiles after the strategy wrapped the module (DDP, FSDP2): the
    weights after two epochs equal the eager run's, and checkpoint keys are unchanged."""
    env = {"OMP_NUM_THREADS": "1"}
    eager = run_script("stages.py", "--strategy", strategy, "--straight", env=env)
    assert eager.returncode == 0, eager.output
    compiled = run_script("stages.py", "--strategy", strategy, "--straight", "--compile",
                          env=env)
    assert compiled.returncode == 0, compiled.output
    assert "torch.compile: the first training_step took" in compiled.output
    want, got = eager.json("rank0")["weights"], compiled.json("rank0")["weights"]
    assert sorted(want) == sorted(got) and not any("_orig_mod" in k for k in got)
    assert weights_equal([want[k] for k in sorted(want)], [got[k] for k in sorted(got)],
                         atol=1e-5)
