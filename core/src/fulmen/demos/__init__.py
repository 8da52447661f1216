"""Lightning's demo models and data (``lightning.pytorch.demos``) on fulmen: ``BoringModel``,
``BoringDataModule``, ``DemoModel`` and their random datasets, for examples, bug reports and
tests. The LSTM and transformer demos (which download WikiText-2) are not provided."""

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

__all__ = ["BoringDataModule", "BoringModel", "DemoModel", "ManualOptimBoringModel",
           "RandomDataset", "RandomDictDataset", "RandomIterableDataset",
           "RandomIterableDatasetWithLen"]
