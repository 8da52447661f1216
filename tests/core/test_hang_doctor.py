"""The hang doctor, with real processes: one rank stuck in its own code, the other in a gloo
all-reduce. Each names where it waits; rank 0 sums it up."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fulmen.errors import ConfigurationError
from fulmen.hang import HangDoctor, threshold_from_env

SCRIPT = """
import os, sys, time
import torch
import torch.distributed as dist
from fulmen.hang import HangDoctor

torch.set_num_threads(1)
rank, port = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
steps = [0]
doctor = HangDoctor(lambda: steps[0], rank=rank, world_size=2, threshold=1.5,
                    address="127.0.0.1", port=port).start()
for step in range(3):
    dist.all_reduce(torch.ones(3, 4))
    steps[0] += 1
if rank == 1:
    time.sleep(600)  # the stuck rank
dist.all_reduce(torch.ones(3, 4))
"""


def free_port_pair() -> int:
    """A free port whose next one is free too: the rendezvous and the doctor's report store
    (``port + 1``). A port picked alone often has its neighbour taken by an ephemeral socket,
    and the doctor then reports per rank only (its documented fallback)."""
    for _ in range(100):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two adjacent free ports found")


@pytest.mark.timeout(120)
def test_a_stuck_rank_is_named_with_its_file_and_line(tmp_path: Path):
    script = tmp_path / "stuck.py"
    script.write_text(SCRIPT)
    port = free_port_pair()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), str(rank), str(port)], env=env,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
             for rank in (0, 1)]
    time.sleep(20)
    outputs = []
    for proc in procs:
        os.killpg(proc.pid, signal.SIGKILL)
        outputs.append(proc.communicate(timeout=30)[1])
    rank0, rank1 = outputs
    sleep_line = SCRIPT.splitlines().index("    time.sleep(600)  # the stuck rank") + 1
    assert "rank 1 (" in rank1 and "outside any collective" in rank1, rank1
    assert f"{script}:{sleep_line}: time.sleep(600)" in rank1, rank1
    assert "rank 0 (" in rank0 and "in all_reduce[[3, 4]]" in rank0, rank0
    assert "who waits where (2 of 2 ranks reported)" in rank0, rank0
    assert f"rank 1 {socket.gethostname()}" in rank0 and f"{script}:{sleep_line}" in rank0
    assert "ranks outside a collective keep the others waiting: look at rank 1" in rank0


def test_progress_keeps_it_quiet_and_stop_ends_the_thread():
    steps = [0]
    doctor = HangDoctor(lambda: steps[0], threshold=0.6).start()
    for _ in range(12):
        steps[0] += 1
        time.sleep(0.1)
    doctor.stop()
    assert doctor.reports == 0


def test_a_fit_without_batch_hooks_is_not_reported_as_stuck(tmp_path: Path):
    """The fit loop calls no hook per batch when nothing overrides the batch hooks (a lean
    Trainer; the progress bar without a terminal): the batches it starts are progress too."""
    script = tmp_path / "slow_batches.py"
    script.write_text(
        "import time, torch, fulmen\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "class Slow(fulmen.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layer = torch.nn.Linear(4, 1)\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        time.sleep(0.1)\n"
        "        return self.layer(batch[0]).pow(2).mean()\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.SGD(self.parameters(), lr=0.1)\n"
        "fulmen.Trainer(max_epochs=1, logger=False, enable_progress_bar=False,\n"
        "               enable_checkpointing=False, enable_model_summary=False).fit(\n"
        "    Slow(), DataLoader(TensorDataset(torch.randn(25, 4)), batch_size=1))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "FULMEN_HANG_TIMEOUT": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hang doctor" not in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("value", ["soon", "-1"])
def test_a_bad_threshold_is_refused(monkeypatch, value):
    monkeypatch.setenv("FULMEN_HANG_TIMEOUT", value)
    with pytest.raises(ConfigurationError, match=f"FULMEN_HANG_TIMEOUT='{value}'"):
        threshold_from_env()
