"""A callback's writes to ``trainer.callback_metrics`` are kept, as in Lightning (its
``LearningRateMonitor`` and many third-party callbacks ``update`` it for ``ModelCheckpoint`` and
``EarlyStopping`` to monitor); before, fulmen returned a copy and the writes were lost silently."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.callbacks import ModelCheckpoint


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Scores(fulmen.Callback):
    """Writes a score per epoch the way Lightning callbacks do: 3, 1, 2 for epochs 0, 1, 2."""

    def on_train_epoch_end(self, trainer, module):
        score = (3.0, 1.0, 2.0)[trainer.current_epoch]
        trainer.callback_metrics.update({"score": torch.tensor(score)})
        trainer.callback_metrics["epoch_seen"] = torch.tensor(float(trainer.current_epoch))


def test_written_values_are_kept_and_monitored(tmp_path):
    data = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))),
                      batch_size=8)
    best = ModelCheckpoint(dirpath=tmp_path, monitor="score", mode="min", save_top_k=1,
                           filename="{epoch}-{score:.0f}")
    trainer = fulmen.Trainer(accelerator="cpu", max_epochs=3, logger=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             callbacks=[Scores(), best])
    trainer.fit(Model(), data)
    assert float(trainer.callback_metrics["score"]) == 2.0
    assert float(trainer.callback_metrics["epoch_seen"]) == 2.0
    assert "loss" in trainer.callback_metrics  # logged values are still there
    assert best.best_model_path.endswith("epoch=1-score=1.ckpt")
    assert float(best.best_model_score) == 1.0
