"""Lightning's Fabric examples ``image_classifier/train_fabric.py`` and
``kfold_cv/train_fabric.py``, with ``Fabric`` -> ``fulmen.Lite`` and MNIST replaced by an
in-memory dataset of the same shape (no torchvision here); sklearn's ``KFold`` by contiguous
folds. Otherwise the user's code as published: ``StepLR(optimizer)`` on the set-up optimizer,
``all_gather`` of a Python number, ``rank_zero_first``, ``save(path=, state=)``. Writes
``<out>/rank<R>.json``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, SubsetRandomSampler, TensorDataset

import fulmen
from fulmen.utilities import seed_everything


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16 * 6 * 6, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        return F.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)


def digits(n: int, seed: int) -> TensorDataset:
    """A learnable stand-in for MNIST: class k has a bright k-th row band."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = torch.randn(n, 1, 16, 16, generator=g) * 0.3
    for i, label in enumerate(y.tolist()):
        x[i, 0, label, :] += 2.0
    return TensorDataset(x, y)


def image_classifier(lite: fulmen.Lite, hparams: argparse.Namespace) -> dict:
    seed_everything(hparams.seed)
    with lite.rank_zero_first(local=False):
        train_dataset, test_dataset = digits(256, 0), digits(64, 1)
    train_loader = DataLoader(train_dataset, batch_size=hparams.batch_size)
    test_loader = DataLoader(test_dataset, batch_size=hparams.batch_size)
    train_loader, test_loader = lite.setup_dataloaders(train_loader, test_loader)

    model = Net()
    optimizer = optim.Adadelta(model.parameters(), lr=hparams.lr)
    model, optimizer = lite.setup(model, optimizer)
    scheduler = StepLR(optimizer, step_size=1, gamma=hparams.gamma)

    for _epoch in range(1, hparams.epochs + 1):
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            lite.backward(loss)
            optimizer.step()
        scheduler.step()

        model.eval()
        test_loss, correct = 0, 0
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                correct += (output.argmax(dim=1) == target).sum().item()
        test_loss = lite.all_gather(test_loss).sum() / len(test_loader.dataset)
        accuracy = lite.all_gather(correct).sum() / len(test_loader.dataset)
        lite.print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {100 * accuracy:.0f}%")
    lite.save(path=hparams.out / "mnist_cnn.pt", state=model.state_dict())
    return {"accuracy": float(accuracy), "lr": optimizer.param_groups[0]["lr"]}


def kfold(lite: fulmen.Lite, hparams: argparse.Namespace) -> list[float]:
    seed_everything(hparams.seed)
    with lite.rank_zero_first(local=False):
        dataset = digits(240, 2)
    folds = 3
    indices = list(range(len(dataset)))
    splits = [(indices[:k * 80] + indices[(k + 1) * 80:], indices[k * 80:(k + 1) * 80])
              for k in range(folds)]
    models = [Net() for _ in range(folds)]
    optimizers = [optim.Adadelta(model.parameters(), lr=hparams.lr) for model in models]
    for i in range(folds):
        models[i], optimizers[i] = lite.setup(models[i], optimizers[i])
    accuracies = []
    for _epoch in range(1, hparams.epochs + 1):
        epoch_acc = 0.0
        for fold, (train_ids, val_ids) in enumerate(splits):
            train_loader = DataLoader(dataset, batch_size=hparams.batch_size,
                                      sampler=SubsetRandomSampler(train_ids))
            val_loader = DataLoader(dataset, batch_size=hparams.batch_size,
                                    sampler=SubsetRandomSampler(val_ids))
            train_loader, val_loader = lite.setup_dataloaders(train_loader, val_loader)
            model, optimizer = models[fold], optimizers[fold]
            model.train()
            for data, target in train_loader:
                optimizer.zero_grad()
                lite.backward(F.nll_loss(model(data), target))
                optimizer.step()
            model.eval()
            correct, seen = 0, 0
            with torch.no_grad():
                for data, target in val_loader:
                    correct += (model(data).argmax(dim=1) == target).sum().item()
                    seen += len(target)
            epoch_acc += float(lite.all_gather(correct).sum() / lite.all_gather(seen).sum())
        accuracies.append(epoch_acc / folds)
        lite.print(f"Epoch {_epoch} - Average acc: {epoch_acc / folds:.3f}")
    return accuracies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    hparams = parser.parse_args(argv)
    torch.set_num_threads(1)
    lite = fulmen.Lite(accelerator="cpu", strategy=hparams.strategy, devices=hparams.devices)
    lite.launch()  # Fabric's form: start the processes, then go on with the script in each
    result = {"classifier": image_classifier(lite, hparams), "kfold": kfold(lite, hparams),
              "world_size": lite.world_size}
    (hparams.out / f"rank{lite.global_rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
