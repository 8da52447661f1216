"""A script without a main guard under ddp_spawn: a few lines that show the fix, not Python's
bootstrapping traceback repeated per worker."""

from __future__ import annotations

import subprocess
import sys

import pytest
from processes import clean_environment

SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset
import fulmen

class Model(fulmen.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 2)
    def training_step(self, batch, batch_idx):
        return self.net(batch[0]).sum()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

data = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_epochs=1, logger=False,
               enable_progress_bar=False).fit(Model(), data)
"""


@pytest.mark.timeout(120)
def test_a_missing_main_guard_is_explained(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=110, cwd=tmp_path, env=clean_environment([]))
    assert done.returncode == 1
    assert f"importing {script} again" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr and "strategy='ddp'" in done.stderr
    assert "bootstrapping phase" not in done.stderr
    assert "FulmenError: strategy='ddp_spawn': worker process" in done.stderr
    assert len(done.stderr.splitlines()) < 40
