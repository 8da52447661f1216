# fulmen drop-in corpus: Lightning-AI/pytorch-lightning docs/source-pytorch/data/datamodule.rst
# at commit 7f0c3436cd3f6ad3753125672024fc415cbcb414 (Apache-2.0): the tutorial's "more
# realistic" MNISTDataModule, verbatim, trained with the page's usage lines
# (`trainer.fit(model, mnist)`, then test and predict).
# Changed (imports, offline data, sizes):
#   - no torchvision here: MNIST is Lightning's demo reading its hosted tensors (offline stand-in),
#     normalized as the transform did; random_split sizes for the small stand-in
#   - added: LitClassifier (the page uses one without showing it: a small MLP), the Trainer's
#     flags from the command line (--strategy, --devices), seed_everything and report(...)
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, random_split

import lightning as L
from lightning.pytorch.demos.mnist_datamodule import MNIST
from corpus_report import report


class MNISTDataModule(L.LightningDataModule):
    def __init__(self, data_dir: str = "./"):
        super().__init__()
        self.data_dir = data_dir
        self.transform = (0.1307 * 255, 0.3081 * 255)

    def prepare_data(self):
        # download
        MNIST(self.data_dir, train=True, download=True)
        MNIST(self.data_dir, train=False, download=True)

    def setup(self, stage: str):
        # Assign train/val datasets for use in dataloaders
        if stage == "fit":
            mnist_full = MNIST(self.data_dir, train=True, normalize=self.transform)
            self.mnist_train, self.mnist_val = random_split(
                mnist_full, [1800, 200], generator=torch.Generator().manual_seed(42)
            )

        # Assign test dataset for use in dataloader(s)
        if stage == "test":
            self.mnist_test = MNIST(self.data_dir, train=False, normalize=self.transform)

        if stage == "predict":
            self.mnist_predict = MNIST(self.data_dir, train=False, normalize=self.transform)

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=32)

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=32)

    def test_dataloader(self):
        return DataLoader(self.mnist_test, batch_size=32)

    def predict_dataloader(self):
        return DataLoader(self.mnist_predict, batch_size=32)


class LitClassifier(L.LightningModule):
    def __init__(self, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 64), torch.nn.ReLU(),
                                       torch.nn.Linear(64, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self.net(x), y), sync_dist=True)

    def test_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log_dict({"test_loss": F.cross_entropy(logits, y),
                       "test_acc": (logits.argmax(-1) == y).float().mean()}, sync_dist=True)

    def predict_step(self, batch, batch_idx):
        return self.net(batch[0]).argmax(-1)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--devices", default="auto")
    args = parser.parse_args()
    L.seed_everything(3)
    my_path = "data"
    mnist = MNISTDataModule(my_path)
    model = LitClassifier()
    trainer = L.Trainer(accelerator="cpu", strategy=args.strategy, devices=args.devices, max_epochs=2,
                        enable_progress_bar=False)
    trainer.fit(model, mnist)
    results = trainer.test(datamodule=mnist)
    predictions = trainer.predict(model, datamodule=mnist)
    report(trainer, model, predicted=sum(int(p.sum()) for p in predictions), **results[0])
