"""Ports of small Lightning API tests: ``trainer.init_module``
(``tests_pytorch/trainer/test_trainer.py::test_init_module_device_type``, the CPU case),
``CSVLogger(prefix=...)``, ``module.on_gpu``, ``EarlyStopping(stopping_threshold=inf)``.

Deliberate differences (also in docs/migrating.md):

- ``test_init_module_context`` (Lightning mocks ``strategy.tensor_init_context``) is replaced by
  checking what the context does: device, precision dtype, and ``empty_init`` skipping the
  initialisation; fulmen strategies have no ``tensor_init_context``.
- CSVLogger's default ``name`` is ``fulmen_logs`` (Lightning: ``lightning_logs``).
"""

from __future__ import annotations

import csv

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import EarlyStopping
from fulmen.loggers import CSVLogger


def test_init_module_device_type() -> None:
    trainer = fulmen.Trainer(accelerator="cpu", devices="auto")
    with trainer.init_module():
        model = BoringModel()
        assert model.device == torch.device("cpu")
    assert not model.on_gpu


def test_init_module_dtype_and_empty_init() -> None:
    trainer = fulmen.Trainer(accelerator="cpu", precision="bf16-true", logger=False)
    with trainer.init_module():
        assert torch.nn.Linear(2, 2).weight.dtype == torch.bfloat16
    with trainer.init_module(empty_init=True):
        torch.manual_seed(0)
        empty = torch.nn.Linear(64, 64)
    torch.manual_seed(0)
    initialised = torch.nn.Linear(64, 64, dtype=torch.bfloat16)
    assert not torch.equal(empty.weight, initialised.weight)  # skipped, not re-drawn


def test_csv_logger_prefix(tmp_path) -> None:
    logger = CSVLogger(tmp_path, prefix="pre")
    logger.log_metrics({"a": 1.0, "b": 2.0}, step=0)
    logger.save()
    with open(logger.metrics_file_path) as handle:
        rows = list(csv.DictReader(handle))
    assert rows == [{"step": "0", "pre-a": "1.0", "pre-b": "2.0"}]


@pytest.mark.parametrize("threshold", [float("inf"), float("-inf")])
def test_early_stopping_accepts_infinite_thresholds(threshold) -> None:
    assert EarlyStopping(monitor="x", stopping_threshold=threshold).stopping_threshold == threshold
    with pytest.raises(fulmen.ConfigurationError, match="stopping_threshold=nan"):
        EarlyStopping(monitor="x", stopping_threshold=float("nan"))
