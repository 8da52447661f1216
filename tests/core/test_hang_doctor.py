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


STALLED_JOB = """
import os, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
import fulmen
from fulmen_strategies import DDPStrategy

torch.set_num_threads(1)
WHERE = sys.argv[1]


class StuckInSetup(DDPStrategy):
    def setup_environment(self):
        super().setup_environment()
        if self.global_rank == 1:
            time.sleep(600)  # stuck in strategy setup


class Model(fulmen.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def prepare_data(self):
        if WHERE == "prepare_data":
            time.sleep(600)  # stuck in prepare_data

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


strategy = StuckInSetup() if WHERE == "setup" else "ddp"
trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_epochs=1,
                         logger=False, enable_progress_bar=False, enable_checkpointing=False,
                         enable_model_summary=False)
trainer.fit(Model(), DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2))
print("finished")
"""


@pytest.mark.timeout(150)
@pytest.mark.parametrize(("where", "stuck_rank", "phase", "marker"), [
    ("setup", 1, "strategy setup (stuck_in_setup.setup_environment", "# stuck in strategy setup"),
    ("prepare_data", 0, "prepare_data (Model.prepare_data)", "# stuck in prepare_data"),
])
def test_a_hang_before_the_loops_is_reported_and_ends_the_job(tmp_path: Path, where: str,
                                                              stuck_rank: int, phase: str,
                                                              marker: str) -> None:
    """Armed from the start: a rank stuck in strategy setup or in prepare_data (the other
    waiting in the barrier after prepare_data) is named with its phase and line, and the job
    ends with the doctor's exit status within the threshold plus a minute."""
    from processes import clean_environment

    from fulmen.hang import EXIT_CODE

    script = tmp_path / "stalled.py"
    script.write_text(STALLED_JOB)
    env = {**clean_environment([]), "OMP_NUM_THREADS": "1", "FULMEN_HANG_TIMEOUT": "8",
           "MASTER_PORT": str(free_port_pair())}
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(script), where], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path, start_new_session=True)
    took = time.monotonic() - start
    line = STALLED_JOB.splitlines().index(next(
        x for x in STALLED_JOB.splitlines() if marker in x)) + 1
    text = done.stderr
    assert done.returncode == EXIT_CODE, text[-3000:]
    assert "finished" not in done.stdout
    assert took < 8 + 60, took
    assert f"rank {stuck_rank} (" in text and f"during {phase}" in text, text[-3000:]
    assert f"{script}:{line}" in text, text[-3000:]
    assert "who waits where (2 of 2 ranks reported)" in text, text[-3000:]
    assert "during barrier after prepare_data" in text, text[-3000:]
    assert "fulmen.errors.HangError: rank" in text and "made no progress" in text


def test_a_barrier_of_several_ranks_without_a_process_group_is_an_error() -> None:
    import fulmen
    from fulmen.errors import FulmenError

    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=False)
    with pytest.raises(FulmenError, match=r"DDPStrategy.barrier\('x'\) on rank 0 of 2: this "
                       r"process has no process group.*must call super\(\).setup_environment"):
        trainer.strategy.barrier("x")
    with pytest.raises(FulmenError, match=r"broadcast\(\) on rank 0 of 2"):
        trainer.strategy.broadcast(1)


LITE_BARRIER = """
import time
import torch
import fulmen

torch.set_num_threads(1)


def run(lite):
    if lite.global_rank == 0:
        lite.barrier("only rank 0")  # rank 0 waits here
    else:
        time.sleep(600)  # rank 1 never comes


fulmen.Lite(accelerator="cpu", devices=2, strategy="ddp").launch(run)
print("finished")
"""


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_lite_a_barrier_one_rank_never_enters_is_reported_and_ends_the_job(tmp_path: Path):
    from processes import clean_environment

    from fulmen.hang import EXIT_CODE

    script = tmp_path / "lite_barrier.py"
    script.write_text(LITE_BARRIER)
    env = {**clean_environment([]), "OMP_NUM_THREADS": "1", "FULMEN_HANG_TIMEOUT": "5",
           "MASTER_PORT": str(free_port_pair())}
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path, start_new_session=True)
    assert done.returncode == EXIT_CODE, done.stderr[-3000:]
    assert time.monotonic() - start < 5 + 60
    assert "rank 0 (" in done.stderr and "during lite.barrier('only rank 0')" in done.stderr
    assert "rank 1: no report" in done.stderr, done.stderr[-3000:]
