"""A DTensor loss (Lightning's tensor-parallel example returns one from ``loss_parallel``) goes
through the non-finite check: fit runs, and a NaN DTensor loss is reported like any other."""

from __future__ import annotations

import socket
import warnings

import pytest
import torch.distributed as dist
from boring import BoringModel
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate

import fulmen
from fulmen.errors import NonFiniteError, NonFiniteWarning


@pytest.fixture
def one_rank_group():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


class DTensorLoss(BoringModel):
    def __init__(self, mesh, nan_at: int = -1) -> None:
        super().__init__()
        self.mesh, self.nan_at = mesh, nan_at

    def training_step(self, batch, batch_idx):
        loss = self.step(batch)
        if batch_idx == self.nan_at:
            loss = loss * float("nan")
        return DTensor.from_local(loss, self.mesh, [Replicate()])


def _fit(model, **flags) -> fulmen.Trainer:
    trainer = fulmen.Trainer(accelerator="cpu", devices=1, max_epochs=1, limit_train_batches=3,
                             limit_val_batches=0, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, **flags)
    trainer.fit(model)
    return trainer


def test_dtensor_loss_trains(one_rank_group) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteWarning)
        assert _fit(DTensorLoss(one_rank_group)).global_step == 3


def test_non_finite_dtensor_loss_is_reported(one_rank_group) -> None:
    with pytest.warns(NonFiniteWarning, match="the training loss is nan at epoch 0"):
        _fit(DTensorLoss(one_rank_group, nan_at=1))
    with pytest.raises(NonFiniteError, match="batch_idx 1"):
        _fit(DTensorLoss(one_rank_group, nan_at=1), detect_anomaly=True)
