"""Lite's loop answers a stop notice on 2 processes that fulmen starts itself (``ddp_spawn``;
torchrun is in ``test_chaos.py``): SIGTERM to rank 1, every rank stops after the same step, one
checkpoint, the launching process exits 143 (not a failure), and (slow) the relaunch ends on the
uninterrupted weights with nothing redone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = pytest.mark.timeout(300)
ENV = {"OMP_NUM_THREADS": "1"}


def stop_one_rank(run_script: Any, folder: Path) -> dict[str, Any]:
    stopped = run_script("lite_notice.py", "--at", "6", "--ckpt", str(folder), env=ENV)
    assert stopped.returncode == 143, stopped.stderr[-3000:]  # a supervisor restarts the job
    assert "Traceback" not in stopped.stderr and "failed" not in stopped.stderr
    r0, r1 = stopped.json("rank0"), stopped.json("rank1")
    assert r0["stopped"] == r1["stopped"] >= 6  # the same step on every rank
    saved = torch.load(folder / "last.ckpt", weights_only=True)
    assert saved["step"] == r0["stopped"] and saved["fault_tolerance"]["reason"] == "preemption"
    return r0


def test_sigterm_to_one_spawned_rank_stops_both_at_one_step_and_exits_143(run_script, tmp_path):
    stop_one_rank(run_script, tmp_path / "job")


@pytest.mark.slow
def test_the_relaunch_ends_on_the_uninterrupted_weights(run_script, tmp_path):
    straight = run_script("lite_notice.py", "--pace", "0", "--ckpt", str(tmp_path / "a"),
                          env=ENV)
    assert straight.returncode == 0, straight.stderr[-3000:]
    stopped = stop_one_rank(run_script, tmp_path / "job")
    resumed = run_script("lite_notice.py", "--resume", "--ckpt", str(tmp_path / "job"), env=ENV)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for rank in (0, 1):
        done = resumed.json(f"rank{rank}")
        assert done["start"] == stopped["stopped"]
        assert done["resume"] == {"checkpoint_step": stopped["stopped"], "steps_redone": 0}
        assert done["weights"] == straight.json(f"rank{rank}")["weights"]  # bit for bit
