"""Unit tests of what the drop-in corpus (tests/dropin_corpus) found different from Lightning and
fulmen now does as Lightning does; the corpus itself checks them end to end against the real
Lightning (most of it under ``slow``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.dropin import fabric_env
from fulmen.errors import ConfigurationError


def lean(**kwargs: Any) -> dict[str, Any]:
    return {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False,
            "enable_model_summary": False, "accelerator": "cpu", **kwargs}


class Tiny(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss = self.layer(batch[0]).pow(2).mean()
        self.log("train_loss", loss, on_epoch=True)
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> None:
        self.log("test_loss", self.layer(batch[0]).pow(2).mean())

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def data(n: int = 12, batch_size: int = 4) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    return DataLoader(TensorDataset(torch.randn(n, 4, generator=g)), batch_size=batch_size)


def test_a_stage_starts_without_the_last_stages_metrics() -> None:
    """``trainer.test`` after ``fit`` reports only what the test logged (Lightning resets the
    callback, logged and progress-bar metrics when a stage starts)."""
    trainer = fulmen.Trainer(max_epochs=1, **lean())
    model = Tiny()
    trainer.fit(model, data())
    assert "train_loss" in trainer.callback_metrics
    trainer.test(model, data(), verbose=False)
    assert set(trainer.callback_metrics) == {"test_loss"}
    assert set(trainer.logged_metrics) <= {"test_loss", "epoch"}


def test_an_epoch_mean_has_lightnings_bits() -> None:
    """Lightning adds ``value * batch_size`` in the order logged and divides once; a stacked
    weighted sum rounds differently for values like these."""
    values = [0.1 + i / 7 for i in range(37)]

    class Logs(Tiny):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            self.log("v", torch.tensor(values[batch_idx]), on_step=False, on_epoch=True,
                     batch_size=3)
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(max_epochs=1, **lean())
    trainer.fit(Logs(), data(n=37, batch_size=1))
    total = torch.tensor(0.0)
    for v in values:
        total = total + torch.tensor(v) * 3
    assert trainer.callback_metrics["v"].item() == (total / (3 * 37)).item()


def test_fabric_command_line_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fabric run --devices ... --strategy ...`` passes its settings as ``LT_*`` variables."""
    monkeypatch.setenv("LT_ACCELERATOR", "cpu")
    monkeypatch.setenv("LT_DEVICES", "1")
    monkeypatch.setenv("LT_NUM_NODES", "1")
    lite = fulmen.Lite()
    assert lite.device == torch.device("cpu")
    assert fabric_env.arguments_from_env(accelerator="auto", strategy="auto", devices="auto",
                                         num_nodes=1, precision="32-true") == {
        "accelerator": "cpu", "strategy": "auto", "devices": "1", "num_nodes": 1,
        "precision": "32-true"}
    monkeypatch.setenv("LT_CLI_USED", "1")
    with pytest.raises(ConfigurationError, match=r"Fabric\(devices=2, \.\.\.\).*--devices=1"):
        fulmen.Lite(devices=2)


def test_add_lightning_class_args_adds_the_callback(tmp_path: Path) -> None:
    from fulmen.callbacks import EarlyStopping
    from fulmen.cli import FulmenCLI

    class CLI(FulmenCLI):
        def add_arguments_to_parser(self, parser: Any) -> None:
            parser.add_lightning_class_args(EarlyStopping, "early")

    cli = CLI(Tiny, run=False, args=["--early.monitor=train_loss", "--early.patience=7",
                                     f"--trainer.default_root_dir={tmp_path}",
                                     "--trainer.logger=false"])
    found = [c for c in cli.trainer.callbacks if isinstance(c, EarlyStopping)]
    assert len(found) == 1 and found[0].patience == 7


def test_lightnings_demos_read_local_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """``lightning.pytorch.demos``' WikiText2 and MNIST read files that are there (no
    download), and the transformer is Lightning's."""
    from fulmen.demos import Transformer, WikiText2
    from fulmen.demos.mnist_datamodule import MNIST, MNISTDataModule

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "wikitext-2.txt").write_text("a b c a b\n" * 40)
    text = WikiText2()
    assert text.vocab_size == 4 and len(text) == 240 // 35 - 1
    out = Transformer(vocab_size=text.vocab_size)(*(t.unsqueeze(0) for t in text[0]))
    assert out.shape == (35, 4)
    folder = tmp_path / "data" / "MNIST" / "complete"
    folder.mkdir(parents=True)
    for name, rows in (("training.pt", 30), ("test.pt", 10)):
        torch.save((torch.zeros(rows, 28, 28, dtype=torch.uint8), torch.arange(rows) % 10),
                   folder / name)
    monkeypatch.setenv("PL_USE_MOCKED_MNIST", "1")
    assert len(MNIST("data", train=False)) == 10
    dm = MNISTDataModule(val_split=10, num_workers=0, batch_size=5)
    dm.setup("fit")
    assert len(dm.train_dataloader()) == 4
