"""What a run tells its operator: the banner, profilers, and the hang doctor under a Trainer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.profilers import SimpleProfiler

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


class Tiny(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        return self.net(batch[0]).sum()

    def validation_step(self, batch, batch_idx):
        self.log("val", self.net(batch[0]).sum())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def data() -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)


@pytest.mark.parametrize("name", ["simple", "advanced", "pytorch"])
def test_profilers_time_the_steps_and_hooks_of_a_fit(tmp_path, name):
    trainer = fulmen.Trainer(accelerator="cpu", max_epochs=1, logger=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             default_root_dir=tmp_path, profiler=name)
    trainer.profiler.filename = "perf"
    trainer.fit(Tiny(), data(), data())
    report = (tmp_path / "fit-perf-0.txt").read_text()
    assert "training_step" in report and "FIT Profiler Report" in report


def test_the_simple_profiler_counts_every_call(tmp_path):
    profiler = SimpleProfiler()
    trainer = fulmen.Trainer(accelerator="cpu", max_epochs=2, logger=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             default_root_dir=tmp_path, profiler=profiler,
                             num_sanity_val_steps=0)
    trainer.fit(Tiny(), data(), data())
    assert len(profiler.recorded_durations["[Strategy]training_step"]) == 8
    assert len(profiler.recorded_durations["[Strategy]validation_step"]) == 8


@pytest.mark.timeout(120)
def test_the_banner_names_the_composed_parts_once(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import torch, fulmen\n"
        "from tiny_models import TinyModule, TinyData\n"
        "fulmen.seed_everything(3)\n"
        "t = fulmen.Trainer(accelerator='cpu', devices=2, strategy='ddp', max_epochs=1,\n"
        "                   logger=False, enable_progress_bar=False, enable_model_summary=False)\n"
        "t.fit(TinyModule(), datamodule=TinyData())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=110, env={**env, "PYTHONPATH": str(FIXTURES)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("fulmen fit:") == 1  # rank 0 only
    banner = done.stderr.split("fulmen fit:")[1]
    for part in ("strategy     ddp", "fulmen-strategies", "environment  local",
                 "2 per node [0, 1] x 1 node(s) = world size 2", "seed         3"):
        assert part in banner, banner


@pytest.mark.timeout(180)
def test_a_hung_rank_is_named_with_its_file_and_line(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(
        "import time, torch, fulmen\n"
        "from tiny_models import TinyModule, TinyData\n"
        "class Stuck(TinyModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        if self.global_rank == 1 and batch_idx == 2:\n"
        "            time.sleep(600)  # stuck here\n"
        "        return super().training_step(batch, batch_idx)\n"
        "t = fulmen.Trainer(accelerator='cpu', devices=2, strategy='ddp', max_epochs=1,\n"
        "                   logger=False, enable_progress_bar=False, enable_model_summary=False)\n"
        "t.fit(Stuck(), datamodule=TinyData())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, start_new_session=True,
                            env={**env, "PYTHONPATH": str(FIXTURES), "FULMEN_HANG_TIMEOUT": "3"})
    time.sleep(40)  # start-up, 2 batches, the 3 s threshold, the summary's wait for reports
    os.killpg(proc.pid, signal.SIGKILL)
    stderr = proc.communicate(timeout=30)[1]
    assert f"{script}:6: time.sleep(600)" in stderr, stderr
    assert "rank 1 (" in stderr and "outside any collective" in stderr
    assert "who waits where (2 of 2 ranks reported)" in stderr, stderr
    assert "ranks outside a collective keep the others waiting: look at rank 1" in stderr
