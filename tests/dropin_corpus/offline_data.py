"""Offline stand-ins for the data sets the corpus scripts download, written where the scripts'
own loaders look (so the loading code stays Lightning's):

- ``MNIST/complete/{training,test}.pt`` under ``data/`` and ``Datasets/``: Lightning's hosted MNIST
  tensor files (``(uint8 images N x 28 x 28, int64 labels)``), made from scikit-learn's bundled
  8 x 8 digits, upscaled; read by ``lightning.pytorch.demos.mnist_datamodule.MNIST`` with
  ``PL_USE_MOCKED_MNIST=1`` (there is no torchvision here).
- ``data/wikitext-2.txt``: a synthetic text with a learnable structure in place of WikiText-2's
  training split; ``lightning.pytorch.demos.WikiText2`` downloads only when the file is missing.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch
import torch.nn.functional as F

#: What every corpus run needs in its environment (Lightning's own switch for the MNIST demo).
ENV = {"PL_USE_MOCKED_MNIST": "1"}


Split = tuple[torch.Tensor, torch.Tensor]


def digits_mnist(train_rows: int = 2000, test_rows: int = 500) -> tuple[Split, Split]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    images = F.interpolate(images, size=(28, 28), mode="bilinear", align_corners=False)
    images = (images.squeeze(1) * 255).round().clamp(0, 255).to(torch.uint8)
    labels = torch.tensor(digits.target, dtype=torch.int64)
    shifted = [images, images.roll(1, -1), images.roll(1, -2), images.roll(-1, -1)]
    train = torch.cat(shifted)[:train_rows], labels.repeat(len(shifted))[:train_rows]
    test = images.roll(-1, -2)[-test_rows:], labels[-test_rows:]
    return train, test


def wikitext(words: int = 36_000, vocab: int = 200, seed: int = 0) -> str:
    """Sentences from a fixed random bigram table: a next word is predictable from the last."""
    rng = random.Random(seed)
    table = {w: [rng.randrange(vocab) for _ in range(3)] for w in range(vocab)}
    lines, line, word = [], [], 0
    for _ in range(words):
        word = rng.choice(table[word]) if rng.random() < 0.9 else rng.randrange(vocab)
        line.append(f"w{word}")
        if len(line) == 12:
            lines.append(" ".join(line))
            line = []
    return "\n".join(lines) + "\n"


def write(root: Path) -> None:
    """Write every stand-in under ``root`` (the directory the scripts run in)."""
    train, test = digits_mnist()
    for base in (root / "data", root / "Datasets"):
        folder = base / "MNIST" / "complete"
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(train, folder / "training.pt")
        torch.save(test, folder / "test.pt")
    (root / "data" / "wikitext-2.txt").write_text(wikitext())
