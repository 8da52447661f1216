"""pipe: FairScale's Pipe over 2 CPU devices in one process (worker threads, micro-batches,
activation checkpointing) — same outputs, gradients and training as the unsplit model."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.callbacks import ModelCheckpoint
from fulmen_fairscale import PipeStrategy

pytestmark = pytest.mark.timeout(120)


def layers() -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 2))


class PipeModel(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sequential_module = layers()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sequential_module(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("test_acc", (self(x).argmax(1) == y).float().mean())

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.05)


def loader() -> DataLoader:
    x = torch.randn(48, 8, generator=torch.Generator().manual_seed(1))
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)


def trainer(strategy: Any, tmp_path: Any = None, epochs: int = 2, **kwargs: Any) -> fulmen.Trainer:
    callbacks = [ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1)] if tmp_path else []
    return fulmen.Trainer(accelerator="cpu", devices=2 if strategy != "single_device" else 1,
                          strategy=strategy, max_epochs=epochs, logger=False,
                          enable_progress_bar=False, enable_model_summary=False,
                          enable_checkpointing=bool(callbacks), callbacks=callbacks, **kwargs)


@pytest.mark.parametrize("checkpoint", ["never", "except_last", "always"])
def test_pipe_output_and_gradients_equal_the_unsplit_model(checkpoint):
    x = torch.randn(12, 8, generator=torch.Generator().manual_seed(2))
    plain = layers()
    expected = plain(x)
    expected.square().sum().backward()

    def run(lite: fulmen.Lite) -> tuple[torch.Tensor, list[torch.Tensor], Any]:
        model = lite.setup(layers())
        out = model(x)
        out.square().sum().backward()
        return out.detach(), [p.grad for p in model.parameters()], lite.strategy.pipe

    lite = fulmen.Lite(accelerator="cpu", devices=2, strategy=PipeStrategy(
        balance=[2, 3], chunks=4, checkpoint=checkpoint))
    out, grads, pipe = lite.launch(run)
    assert pipe is not None and [len(p) for p in pipe.partitions] == [2, 3]
    assert torch.allclose(out, expected.detach(), atol=1e-6)  # chunks change BLAS blocking
    for got, want in zip(grads, [p.grad for p in plain.parameters()]):
        assert torch.allclose(got, want, atol=1e-6)


def test_pipe_trains_like_one_device_checkpoints_resumes_and_tests(tmp_path):
    single = PipeModel()
    trainer("single_device").fit(single, loader())
    piped = PipeModel()
    fit = trainer(PipeStrategy(balance=[3, 2], chunks=4, checkpoint="always"), tmp_path)
    fit.fit(piped, loader())
    assert fit.strategy.name == "pipe" and fit.global_step == 12
    for a, b in zip(piped.parameters(), single.parameters()):
        assert torch.allclose(a, b, atol=1e-5)
    # The Sequential got its own forward back; the state-dict keys are the unsplit model's.
    assert "forward" not in vars(piped.sequential_module)
    saved = torch.load(tmp_path / "ckpt" / "epoch=0-step=6.ckpt", weights_only=True)
    assert set(saved["state_dict"]) == set(PipeModel().state_dict())
    assert saved["optimizer_states"][0]["state"]

    resumed = PipeModel()
    again = trainer(PipeStrategy(balance=[3, 2], chunks=4, checkpoint="always"))
    again.fit(resumed, loader(), ckpt_path=tmp_path / "ckpt" / "epoch=0-step=6.ckpt")
    assert again.global_step == 12
    for a, b in zip(resumed.parameters(), piped.parameters()):
        assert torch.equal(a, b)
    results = again.test(resumed, loader(), verbose=False)
    assert 0 < results[0]["test_acc"] <= 1


def test_pipe_by_name_splits_evenly_and_finds_the_only_sequential():
    class Wrapped(fulmen.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = torch.nn.Identity()
            self.body = layers()

    def run(lite: fulmen.Lite) -> list[int]:
        lite.setup(Wrapped())
        return [len(p) for p in lite.strategy.pipe.partitions]

    assert fulmen.Lite(accelerator="cpu", devices=2, strategy="pipe").launch(run) == [3, 2]
