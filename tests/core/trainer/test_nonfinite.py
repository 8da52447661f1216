"""Non-finite losses are never silent: one warning naming the step and batch index, without a
per-step host sync; ``detect_anomaly=True`` stops every rank at the same step."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.errors import NonFiniteError, NonFiniteWarning
from fulmen.trainer.finite import NonFiniteWatch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


class Poisoned(fulmen.Module):
    """Batch ``bad_batch`` of every epoch holds ``value`` (NaN or inf) in its inputs."""

    def __init__(self, bad_batch: int = 3, value: float = float("nan"),
                 manual: bool = False) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.bad_batch, self.value = bad_batch, value
        self.automatic_optimization = not manual

    def training_step(self, batch, batch_idx):
        x = batch[0]
        if batch_idx == self.bad_batch:
            x = x.clone()
            x[0, 0] = self.value
        loss = self.net(x).pow(2).mean()
        if not self.automatic_optimization:
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _loader() -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=4)


def _trainer(tmp_path, **kwargs) -> fulmen.Trainer:
    return fulmen.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False,
                          enable_model_summary=False, enable_checkpointing=False,
                          default_root_dir=tmp_path, **kwargs)


@pytest.mark.parametrize("manual", [False, True], ids=["automatic", "manual"])
def test_a_nan_input_warns_once_naming_the_step_and_batch(tmp_path, manual):
    trainer = _trainer(tmp_path, max_epochs=2, log_every_n_steps=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(Poisoned(manual=manual), _loader())
    found = [w for w in caught if issubclass(w.category, NonFiniteWarning)]
    assert len(found) == 1, [str(w.message) for w in caught]  # once, not per step or epoch
    message = str(found[0].message)
    assert "the training loss is nan at epoch 0, global step 3, batch_idx 3" in message
    assert "check the inputs" in message and "detect_anomaly=True" in message
    assert trainer.global_step == 16  # warning only: the run goes on


def test_an_inf_loss_after_the_last_logging_step_is_reported_at_epoch_end(tmp_path):
    trainer = _trainer(tmp_path, max_epochs=1, log_every_n_steps=50)
    with pytest.warns(NonFiniteWarning, match="is inf at epoch 0, global step 6, batch_idx 6"):
        trainer.fit(Poisoned(bad_batch=6, value=float("inf")), _loader())


def test_detect_anomaly_stops_at_the_first_non_finite_loss(tmp_path):
    trainer = _trainer(tmp_path, max_epochs=1, detect_anomaly=True)
    model = Poisoned()
    with pytest.raises(NonFiniteError, match="is nan at epoch 0, global step 3, batch_idx 3; "
                       "stopping because Trainer\\(detect_anomaly=True\\)"):
        trainer.fit(model, _loader())
    assert trainer.global_step == 3
    assert all(torch.isfinite(p).all() for p in model.parameters())  # no step was taken on it


def test_finite_runs_stay_quiet(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteWarning)
        _trainer(tmp_path, max_epochs=1, log_every_n_steps=1).fit(Poisoned(bad_batch=-1),
                                                                  _loader())


SCRIPT = """
import sys, warnings, torch, fulmen
from torch.utils.data import DataLoader, TensorDataset
from fulmen.errors import NonFiniteError

class Net(fulmen.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
    def training_step(self, batch, batch_idx):
        x = batch[0]
        if self.global_rank == 1 and batch_idx == 2:
            x = x.clone(); x[0, 0] = float('nan')
        return self.net(x).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

t = fulmen.Trainer(accelerator='cpu', devices=2, strategy='ddp', max_epochs=1, logger=False,
                   enable_progress_bar=False, enable_model_summary=False,
                   enable_checkpointing=False, log_every_n_steps=2,
                   detect_anomaly=sys.argv[1] == 'stop')
try:
    t.fit(Net(), DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=4))
except NonFiniteError as exc:
    print(f'STOPPED rank {t.global_rank} at step {t.global_step}: {exc}', flush=True)
    # the first rank to exit ends the job: wait until every rank has said where it stopped
    import pathlib, time
    pathlib.Path(f'stopped.{t.global_rank}').touch()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(
            pathlib.Path(f'stopped.{r}').exists() for r in range(t.world_size)):
        time.sleep(0.05)
    sys.exit(3)
print(f'FINISHED rank {t.global_rank} at step {t.global_step}', flush=True)
"""


def _run_ddp(tmp_path, mode: str) -> subprocess.CompletedProcess:
    script = tmp_path / "nan_ddp.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    env.update(OMP_NUM_THREADS="1", FULMEN_HANG_TIMEOUT="60")
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                          cwd=tmp_path, timeout=280, env=env)


@pytest.mark.timeout(300)
def test_ddp_every_rank_stops_together_under_detect_anomaly(tmp_path):
    done = _run_ddp(tmp_path, "stop")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    # Rank 0 stops at the same step because rank 1's loss was NaN: the ranks agreed. (The
    # script holds each rank until both said where they stopped: the first rank to exit ends
    # the job.)
    assert "STOPPED rank 0 at step 2: rank 0/2: the training loss is non-finite on another " \
        "rank at epoch 0, global step 2, batch_idx 2" in out, out
    assert "STOPPED rank 1 at step 2: rank 1/2: the training loss is nan at epoch 0, " \
        "global step 2, batch_idx 2" in out, out
    assert "FINISHED" not in out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ddp_a_nan_on_one_rank_warns_without_stopping(tmp_path):
    done = _run_ddp(tmp_path, "warn")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "rank 1/2: the training loss is nan at epoch 0, global step 2, batch_idx 2" in out, out
    assert out.count("FINISHED") == 2 and "at step 8" in out


class _OneProcess:
    world_size, global_rank, root_device = 1, 0, torch.device("cpu")


def test_losses_on_an_accelerator_wait_for_the_check_and_name_the_first_bad_one():
    watch = NonFiniteWatch(_OneProcess(), stop=False, defer=True)  # as on an accelerator
    losses = [torch.tensor(1.0), torch.tensor(float("inf")), torch.tensor(float("nan"))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteWarning)
        for i, loss in enumerate(losses):
            watch.record(loss, 0, 10 + i, i)  # no host read, so no warning yet
    assert len(watch.pending) == 3
    with pytest.warns(NonFiniteWarning, match="is inf at epoch 0, global step 11, batch_idx 1"):
        watch.check()
    assert watch.pending == []
    watch.record(torch.tensor(float("nan")), 0, 13, 3)
    assert watch.pending == []  # warned once: nothing more is kept


def test_a_cpu_loss_is_read_at_once_and_nothing_is_kept():
    watch = NonFiniteWatch(_OneProcess(), stop=False)
    watch.record(torch.tensor(2.0, requires_grad=True) * 1, 0, 0, 0)
    assert watch.pending == []
    with pytest.warns(NonFiniteWarning, match="is nan at epoch 1, global step 7, batch_idx 2"):
        watch.record(torch.tensor(float("nan"), requires_grad=True) * 1, 1, 7, 2)
