"""A batch hook that does nothing changes nothing: the epoch loop calls only the hooks
something overrides, and whether it calls one must not change what a fit does.

Each case runs twice from the same seed: as it is, and with a callback whose
``on_train_batch_end`` does nothing. The weights (bit for bit), the counters, the callback
metrics, what the CSV logger wrote and the last checkpoint's state must be equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.loggers import CSVLogger


class Model(fulmen.Module):
    def __init__(self, skip: int | None, stop_at: int | None, as_dict: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                       torch.nn.Linear(8, 2))
        self.skip, self.stop_at, self.as_dict = skip, stop_at, as_dict

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        out = self.net(x)
        loss = F.cross_entropy(out, y)
        self.log("loss", loss)  # per step: the fast path of self.log
        self.log("both", loss, on_step=True, on_epoch=True, prog_bar=True)
        self.log("acc", (out.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        self.log("seen", torch.tensor([float(batch_idx)]))  # shape (1,)
        if self.global_step == self.stop_at:
            self.trainer.should_stop = True
        if batch_idx == self.skip:
            return None
        return {"loss": loss} if self.as_dict else loss

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.01)


class BatchEnd(fulmen.Callback):
    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        pass


def _fit(root: Path, general: bool, limits: dict[str, Any], **model: Any) -> dict[str, Any]:
    fulmen.seed_everything(0, verbose=False)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(24, 4, generator=g)
    data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4, shuffle=True)
    trainer = fulmen.Trainer(**limits, log_every_n_steps=3, default_root_dir=root,
                             logger=CSVLogger(root), enable_progress_bar=False,
                             enable_model_summary=False,
                             callbacks=[BatchEnd()] if general else [])
    trainer.fit(module := Model(**model), data)
    [last] = (root / "fulmen_logs" / "version_0" / "checkpoints").glob("*.ckpt")
    checkpoint = torch.load(last, weights_only=False)
    return {
        "weights": [p.detach().clone() for p in module.parameters()],
        "counters": (trainer.global_step, trainer.current_epoch, trainer.batches_that_stepped),
        "callback_metrics": {k: float(v) for k, v in trainer.callback_metrics.items()},
        "csv": (root / "fulmen_logs" / "version_0" / "metrics.csv").read_text(),
        "loops": checkpoint["loops"],
        "checkpoint": last.name,
    }


@pytest.mark.parametrize(("limits", "model"), [
    ({"max_epochs": 2}, {}),
    ({"max_steps": 8}, {"as_dict": True}),  # stops in the middle of the second epoch
    ({"max_epochs": 3}, {"stop_at": 7}),  # the module stops the fit
    ({"max_epochs": 3, "min_epochs": 2}, {"stop_at": 2}),  # a stop waits for min_epochs
    ({"max_epochs": 2}, {"skip": 3}),  # a batch skipped with None
], ids=["epochs", "max_steps", "should_stop", "min_epochs", "skipped_batch"])
def test_an_idle_batch_hook_changes_nothing(tmp_path: Path, limits: dict[str, Any],
                                           model: dict[str, Any]) -> None:
    options = {"skip": None, "stop_at": None, "as_dict": False, **model}
    alone = _fit(tmp_path / "alone", False, limits, **options)
    general = _fit(tmp_path / "general", True, limits, **options)
    for key in alone:
        assert _same(alone[key], general[key]), key


def _same(a: Any, b: Any) -> bool:
    """Equal, with tensors compared bit for bit, inside dicts, lists and tuples."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)
