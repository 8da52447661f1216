"""Code written for Lightning (the seeds) runs after changing only its import line."""

from __future__ import annotations

from typing import Any

import torch
from tiny_models import lean, loader

from fulmen.compat import LightningDataModule, LightningLite, LightningModule, Trainer


class LitModel(LightningModule):  # seed 000: register_buffer, self.device, Tensor.to
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 2)
        self.register_buffer("sigma", torch.eye(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.Tensor(2, 2).zero_()
        z = z.to(x)
        return self.layer(x) @ self.sigma + z.sum()

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        assert self.sigma.device == self.device == x.device
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("validation_loss", loss, on_step=False, on_epoch=True, sync_dist=True)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_seed_code_runs_with_the_compat_names():
    trainer = Trainer(**lean(max_epochs=1))
    trainer.fit(LitModel(), loader(), loader())
    assert "validation_loss" in trainer.callback_metrics
    assert issubclass(LitModel, LightningModule)
    assert LightningDataModule.__name__ == "DataModule"
    assert LightningLite.__name__ == "Lite"
