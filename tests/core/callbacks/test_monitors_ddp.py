"""The monitoring callbacks and progress bars on two real ``ddp`` processes (gloo)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from processes import script_runner

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("bar", ["tqdm", pytest.param("rich", marks=pytest.mark.slow)])
def test_monitors_log_from_rank_zero_only(tmp_path, bar):
    run = script_runner(tmp_path, SCRIPTS, 200)
    done = run("monitors_ddp.py", "--bar", bar, env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.output[-3000:]
    rank0, rank1 = done.json("rank0"), done.json("rank1")
    assert not rank0["bar_disabled"] and rank1["bar_disabled"]
    # world size 2: global rates are twice the per-device ones (every device assumed equal)
    assert rank0["samples_per_sec"] == pytest.approx(2 * rank0["device_samples_per_sec"])
    assert "train/device/batches_per_sec" in rank0["train_keys"]
    assert rank1["train_keys"] == []  # rank 1 measured nothing
    assert list(rank0["lrs"]) == ["lr-SGD"]
    if bar == "rich":
        assert "Epoch 1" in rank0["rich_output"] and rank1["rich_output"] == ""
    with open(next(done.out.rglob("metrics.csv"))) as handle:
        header = next(csv.reader(handle))
    assert "lr-SGD" in header and "train/device/samples_per_sec" in header
    assert any(h.startswith("DeviceStatsMonitor.on_train_batch_end/cpu_percent") for h in header)
