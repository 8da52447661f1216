"""Bit-exact resume on 2-process ddp: a run resumed from a mid-epoch checkpoint
(``every_n_train_steps``) ends with the weights of the uninterrupted run (``torch.equal``),
with shuffled data, dropout, a noisy augmentation, gradient accumulation and a scheduler."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.timeout(900)  # two 2-process runs; generous for loaded CI machines


def _weights(run, rank: int) -> list[torch.Tensor]:
    return [torch.tensor(v) for _, v in sorted(run.json(f"rank{rank}")["weights"].items())]


def _resume_matches(run_script, *flags: str) -> None:
    env = {"OMP_NUM_THREADS": "1"}
    full = run_script("resume_ddp.py", "--every", "3", *flags, env=env, timeout=400)
    assert full.returncode == 0, full.output[-3000:]
    # 8 batches per rank and epoch, accumulate 2: 4 steps per epoch; step 6 is mid-epoch 1
    ckpt = full.out / "ck" / "epoch=1-step=6.ckpt"
    assert ckpt.exists(), sorted(p.name for p in ckpt.parent.iterdir())
    loops = torch.load(ckpt, weights_only=True)["loops"]["fit"]["progress"]
    assert loops["epochs"] == {"started": 2, "completed": 1}
    assert loops["batches"]["completed"] == 4
    resumed = run_script("resume_ddp.py", "--resume", str(ckpt), "--seed", "99", *flags,
                         env=env, timeout=400)
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert resumed.json("rank0")["global_step"] == full.json("rank0")["global_step"] == 12
    for rank in (0, 1):
        for a, b in zip(_weights(full, rank), _weights(resumed, rank)):
            assert torch.equal(a, b)


def test_mid_epoch_resume_on_two_ddp_processes_is_bit_exact(run_script):
    _resume_matches(run_script)


@pytest.mark.slow
def test_mid_epoch_resume_with_per_rank_seeds_is_bit_exact(run_script):
    """Each rank's random numbers differ (dropout, augmentation): the checkpoint holds every
    rank's random states and each rank resumes its own (and the ranks still shuffle with one
    sampler seed, rank zero's, so their shards do not overlap)."""
    _resume_matches(run_script, "--rank-seeds")
