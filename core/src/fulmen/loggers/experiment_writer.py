"""Lightning's ``ExperimentWriter`` (``lightning.pytorch.loggers.csv_logs``): metrics to
``metrics.csv`` and hyper-parameters to ``hparams.yaml`` in one folder (a local path or an
fsspec URL), for code that writes CSV logs without a logger (``CSVLogger`` is fulmen's logger
for a Trainer or Lite)."""

from __future__ import annotations

import csv
import os
from typing import Any

from fulmen.utilities.cloud_io import get_filesystem
from fulmen.utilities.rank_zero import rank_zero_warn
from fulmen.utilities.saving import save_hparams_to_yaml

__all__ = ["ExperimentWriter"]


class ExperimentWriter:
    """Buffers metrics rows (``log_metrics``) until ``save``; a file already in ``log_dir`` is
    replaced (with a warning), as in Lightning."""

    NAME_METRICS_FILE = "metrics.csv"
    NAME_HPARAMS_FILE = "hparams.yaml"

    def __init__(self, log_dir: str) -> None:
        self.metrics: list[dict[str, Any]] = []
        self.metrics_keys: list[str] = []
        self.hparams: dict[str, Any] = {}
        self._fs = get_filesystem(log_dir)
        self.log_dir = log_dir
        self.metrics_file_path = os.path.join(log_dir, self.NAME_METRICS_FILE)
        if self._fs.exists(log_dir) and self._fs.listdir(log_dir):
            rank_zero_warn(f"Experiment logs directory {log_dir} exists and is not empty. Previous "
                           "log files in this directory will be deleted when the new ones are "
                           "saved!")
            if self._fs.isfile(self.metrics_file_path):
                self._fs.rm_file(self.metrics_file_path)
        self._fs.makedirs(log_dir, exist_ok=True)

    def log_hparams(self, params: dict[str, Any]) -> None:
        """Add ``params`` to the hyper-parameters and write ``hparams.yaml``."""
        self.hparams.update(params)
        save_hparams_to_yaml(os.path.join(self.log_dir, self.NAME_HPARAMS_FILE), self.hparams)

    def log_metrics(self, metrics_dict: dict[str, Any], step: int | None = None) -> None:
        """Buffer one row (tensors as numbers; ``step`` defaults to the row's index)."""
        row = {k: _number(v) for k, v in metrics_dict.items()}
        row["step"] = len(self.metrics) if step is None else step
        self.metrics.append(row)

    def save(self) -> None:
        """Append the buffered rows to ``metrics.csv`` (rewriting it when new columns came)."""
        if not self.metrics:
            return
        new_keys = set().union(*self.metrics) - set(self.metrics_keys)
        self.metrics_keys = sorted({*self.metrics_keys, *new_keys})
        exists = self._fs.isfile(self.metrics_file_path)
        if new_keys and exists:
            with self._fs.open(self.metrics_file_path, "r", newline="") as handle:
                old = list(csv.DictReader(handle))
            with self._fs.open(self.metrics_file_path, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=self.metrics_keys)
                writer.writeheader()
                writer.writerows(old)
        with self._fs.open(self.metrics_file_path, "a" if exists else "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self.metrics_keys)
            if not exists:
                writer.writeheader()
            writer.writerows(self.metrics)
        self.metrics = []


def _number(value: Any) -> Any:
    """A tensor's number (as Lightning's ``_handle_value``); anything else as it is."""
    import torch

    return value.item() if isinstance(value, torch.Tensor) else value
