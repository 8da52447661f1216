"""ModelCheckpoint and EarlyStopping agree across ranks (real ``ddp`` processes, gloo)."""

from __future__ import annotations

from pathlib import Path

import pytest
from processes import script_runner

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.timeout(240)
def test_checkpoint_and_early_stopping_decisions_come_from_rank_zero(tmp_path):
    run = script_runner(tmp_path, SCRIPTS, 200)
    done = run("ranks_agree.py", env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.output[-3000:]
    rank0, rank1 = done.json("rank0"), done.json("rank1")
    ckpt = done.out / "ckpt"
    # rank 0's scores (5, 4, 3, 2 for epochs 0-3; min mode) decide; both ranks hold the same state
    best = str(ckpt / "epoch=3-score=2.0.ckpt")
    assert rank0["best_model_path"] == rank1["best_model_path"] == best
    assert rank0["best_k_models"] == rank1["best_k_models"] == [
        str(ckpt / "epoch=2-score=3.0.ckpt"), str(ckpt / "epoch=3-score=2.0.ckpt")]
    assert rank0["best_model_score"] == rank1["best_model_score"] == 2.0
    assert rank0["files"] == ["epoch=2-score=3.0.ckpt", "epoch=3-score=2.0.ckpt", "last.ckpt"]
    assert (ckpt / "last.ckpt").is_symlink()
    # only rank 0 diverged; every rank stopped at the same epoch
    assert rank0["stopped_epoch"] == rank1["stopped_epoch"] == 3
    assert rank0["epoch"] == rank1["epoch"] == 4
    assert rank0["reason"] == "DIVERGENCE_THRESHOLD"
