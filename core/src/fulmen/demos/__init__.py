"""Lightning's demo models and data (``lightning.pytorch.demos``) on fulmen: ``BoringModel``,
``BoringDataModule``, ``DemoModel`` and their random datasets, for examples, bug reports and
tests; the transformer and LSTM language models with ``WikiText2`` (which downloads WikiText-2's
training text to ``./data/wikitext-2.txt`` unless the file is there); ``mnist_datamodule``'s
``MNIST`` and ``MNISTDataModule`` (Lightning's hosted MNIST tensors, read from
``<root>/MNIST/complete/{training,test}.pt`` when present)."""

from fulmen.demos.boring_classes import (
    BoringDataModule,
    BoringModel,
    DemoModel,
    ManualOptimBoringModel,
    RandomDataset,
    RandomDictDataset,
    RandomIterableDataset,
    RandomIterableDatasetWithLen,
)
from fulmen.demos.lstm import LightningLSTM, SequenceSampler, SimpleLSTM
from fulmen.demos.transformer import LightningTransformer, Transformer, WikiText2

__all__ = ["BoringDataModule", "BoringModel", "DemoModel", "LightningLSTM",
           "LightningTransformer", "ManualOptimBoringModel", "RandomDataset", "RandomDictDataset",
           "RandomIterableDataset", "RandomIterableDatasetWithLen", "SequenceSampler", "SimpleLSTM",
           "Transformer", "WikiText2"]
