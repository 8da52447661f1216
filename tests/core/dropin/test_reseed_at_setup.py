"""Lightning re-seeds at a strategy's set-up: the Trainer's ``DDPStrategy`` (and FSDP, DeepSpeed,
model parallel) call ``reset_seed()`` as they join the process group, at the start of every
stage; Fabric's DDP does not (its FSDP, DeepSpeed and model parallel do); the single-device
strategies never do. So random numbers drawn between ``seed_everything`` and ``fit`` move the
training's draws in one process but not under DDP. fulmen's strategies say the same through
``Strategy.reseeds_at_setup``; checked side by side with the real Lightning (installed in the
dev environment) on the numbers the steps draw. (No Lightning test covers this; the corpus's
transformer example under ``ddp`` found it.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DRAWS = """
import sys, torch
import lightning as L
from lightning.fabric import Fabric
from lightning.pytorch.demos.boring_classes import BoringModel

def draw(stage, rank):  # one write per line: the ranks share the pipe
    sys.stdout.write(f"DRAW {stage} rank={rank} {torch.rand(1).item():.8f}\\n")
    sys.stdout.flush()

class Model(BoringModel):
    def training_step(self, batch, batch_idx):
        if batch_idx == 0:
            draw("fit", self.global_rank)
        return super().training_step(batch, batch_idx)

    def test_step(self, batch, batch_idx):
        if batch_idx == 0:
            draw("test", self.global_rank)
        return super().test_step(batch, batch_idx)

runner, strategy, devices = sys.argv[1], sys.argv[2], int(sys.argv[3])
if runner == "trainer":
    L.seed_everything(7)
    model = Model()
    torch.rand(100)  # drawn between seed_everything and fit
    trainer = L.Trainer(accelerator="cpu", strategy=strategy, devices=devices, max_epochs=1,
                        limit_train_batches=1, limit_val_batches=0, limit_test_batches=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model)
    torch.rand(100)  # and between fit and test
    trainer.test(model, verbose=False)
else:
    fabric = Fabric(accelerator="cpu", strategy=strategy, devices=devices)
    L.seed_everything(7)
    torch.rand(100)
    fabric.launch()
    draw("launch", fabric.global_rank)
"""


def _draws(tmp_path: Path, served: bool, *args: str) -> list[str]:
    import os

    script = tmp_path / "draws.py"
    script.write_text(DRAWS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PL_", "FULMEN_", "LT_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    command = [sys.executable, *(["-m", "fulmen", "run"] if served else []), str(script), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path,
                          env={**env, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    return sorted(re.findall(r"DRAW \w+ rank=\d \d\.\d{8}", done.stdout))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", [("trainer", "ddp", "2"), ("trainer", "auto", "1"),
                                  ("fabric", "ddp", "2")], ids="-".join)
def test_draws_follow_lightnings_reseed(tmp_path: Path, case: tuple[str, str, str]) -> None:
    lightning = _draws(tmp_path, False, *case)
    served = _draws(tmp_path, True, *case)
    assert served == lightning
    ranks = int(case[2])
    assert len(served) == ranks * (2 if case[0] == "trainer" else 1)
