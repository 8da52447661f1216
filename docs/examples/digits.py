"""An MLP on scikit-learn's bundled digits (8x8 images, 10 classes; no download)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen


class DigitsData(fulmen.DataModule):
    """1797 digits, split 1257 train / 270 val / 270 test with a fixed seed."""

    def __init__(self, batch_size: int = 64, num_workers: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        x = torch.tensor(x, dtype=torch.float32) / 16.0
        y = torch.tensor(y, dtype=torch.long)
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
        x, y = x[order], y[order]
        self.train_set = TensorDataset(x[:1257], y[:1257])
        self.val_set = TensorDataset(x[1257:1527], y[1257:1527])
        self.test_set = TensorDataset(x[1527:], y[1527:])

    def _loader(self, dataset: TensorDataset, shuffle: bool) -> DataLoader:
        return DataLoader(dataset, batch_size=self.hparams.batch_size, shuffle=shuffle,
                          num_workers=self.hparams.num_workers)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_set, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_set, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, shuffle=False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, shuffle=False)


class DigitsClassifier(fulmen.Module):
    """64 -> hidden -> hidden -> 10 with dropout; Adam with a cosine schedule."""

    def __init__(self, hidden: int = 128, lr: float = 3e-3, dropout: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Dropout(dropout),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
                      ) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def _evaluate(self, batch: tuple[torch.Tensor, torch.Tensor], stage: str) -> None:
        x, y = batch
        logits = self(x)
        self.log(f"{stage}_loss", F.cross_entropy(logits, y), sync_dist=True)
        self.log(f"{stage}_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True,
                 sync_dist=True)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        self._evaluate(batch, "test")

    def predict_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int,
                     dataloader_idx: int = 0) -> torch.Tensor:
        return self(batch[0]).argmax(1)

    def configure_optimizers(self) -> dict:
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        epochs = self.trainer.max_epochs if self.trainer.max_epochs > 0 else 10
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        return {"optimizer": optimizer, "lr_scheduler": scheduler}
