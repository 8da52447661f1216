"""Lightning's Fabric image-classifier and k-fold examples, as users wrote them, on one process
and with ``ddp`` on two CPU processes (see scripts/fabric_examples.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from processes import script_runner

SCRIPTS = Path(__file__).parent / "scripts"


def test_fabric_examples_in_one_process(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    from fabric_examples import main

    main(["--out", str(tmp_path), "--epochs", "2"])
    result = json.loads((tmp_path / "rank0.json").read_text())
    assert result["world_size"] == 1
    assert result["classifier"]["accuracy"] > 0.5
    assert result["classifier"]["lr"] == pytest.approx(0.49)  # StepLR stepped twice: 1 * 0.7**2
    assert result["kfold"][-1] > 0.5
    assert (tmp_path / "mnist_cnn.pt").exists()


@pytest.mark.timeout(300)
def test_fabric_examples_with_ddp_on_two_processes(tmp_path):
    run = script_runner(tmp_path, SCRIPTS, 280)
    done = run("fabric_examples.py", "--strategy", "ddp", "--devices", "2", "--epochs", "2",
               env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.output[-3000:]
    rank0, rank1 = done.json("rank0"), done.json("rank1")
    assert rank0["world_size"] == rank1["world_size"] == 2
    assert rank0["classifier"] == rank1["classifier"]  # gathered values: every rank agrees
    assert rank0["classifier"]["accuracy"] > 0.5
    assert rank0["kfold"] == rank1["kfold"]
    assert (done.out / "mnist_cnn.pt").exists()
