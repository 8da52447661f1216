"""``CSVLogger.experiment``: Lightning's ``ExperimentWriter`` API, from the ``experiment`` uses in
Lightning's ``tests_pytorch/loggers/test_csv.py`` (``test_csv_logger_remotefs``,
``test_metrics_reset_after_save``, ``test_append_columns``, ``test_init_arg_with_runtime_change``'s
``NAME_HPARAMS_FILE``), ported to fulmen.

Deliberate differences:
- The writer is a view of the logger (the same rows and files): fulmen's ``CSVLogger`` keeps one
  row per step (see docs/migrating.md), and so does ``experiment.log_metrics``.
- Lightning deletes an existing ``metrics.csv`` of the version when ``experiment`` is first
  used; fulmen keeps it (a resumed run continues its version), so
  ``test_manual_versioning_file_exists`` is not ported.
"""

from __future__ import annotations

import csv

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.api.logger import NoOpExperiment
from fulmen.loggers import CSVLogger
from fulmen.loggers.csv import ExperimentWriter
from fulmen.utilities.rank_zero import current_rank, set_rank


def test_csv_logger_remotefs():
    fsspec = pytest.importorskip("fsspec")
    logger = CSVLogger(save_dir="memory://test_fit_csv_logger_remotefs")
    fs, _ = fsspec.core.url_to_fs("memory://test_fit_csv_logger_remotefs")
    exp = logger.experiment
    exp.log_metrics({"loss": 0.1})
    exp.save()
    metrics_file = logger.log_dir + "/" + ExperimentWriter.NAME_METRICS_FILE
    assert fs.isfile(metrics_file)


def test_metrics_reset_after_save(tmp_path):
    logger = CSVLogger(tmp_path, flush_logs_every_n_steps=2)
    metrics = {"test": 1}
    logger.log_metrics(metrics, step=0)
    assert logger.experiment.metrics
    logger.log_metrics(metrics, step=1)  # flush triggered
    assert not logger.experiment.metrics


def test_append_columns(tmp_path):
    """Test that the CSV file gets rewritten with new headers if the columns change."""
    logger = CSVLogger(tmp_path, flush_logs_every_n_steps=1)
    logger.log_metrics({"a": 1, "b": 2}, step=0)
    logger.log_metrics({"a": 1, "b": 2, "c": 3}, step=1)
    with open(logger.experiment.metrics_file_path) as file:
        header = file.readline().strip()
        assert set(header.split(",")) == {"step", "a", "b", "c"}
    logger.log_metrics({"a": 1, "c": 3}, step=2)
    with open(logger.experiment.metrics_file_path) as file:
        header = file.readline().strip()
        assert set(header.split(",")) == {"step", "a", "b", "c"}
    assert set(logger.experiment.metrics_keys) == {"step", "a", "b", "c"}


def test_experiment_writer_api(tmp_path):
    """What user code calls on ``self.logger.experiment``: metrics (tensors as numbers, step
    defaulting to the rows pending), hyper-parameters, save; into the logger's own files."""
    logger = CSVLogger(tmp_path, name="exp", version=0)
    exp = logger.experiment
    assert isinstance(exp, ExperimentWriter)
    assert exp.log_dir == logger.log_dir and (tmp_path / "exp" / "version_0").is_dir()
    assert exp.metrics_file_path == logger.metrics_file_path
    assert (exp.NAME_METRICS_FILE, exp.NAME_HPARAMS_FILE) == ("metrics.csv", "hparams.yaml")
    exp.log_metrics({"loss": torch.tensor(0.5), "n": 3})
    exp.log_metrics({"loss": 0.25}, step=7)
    assert exp.metrics == [{"step": 0, "loss": 0.5, "n": 3}, {"step": 7, "loss": 0.25}]
    exp.log_hparams({"lr": 0.1})
    assert exp.hparams == {"lr": 0.1} == logger.hparams
    exp.save()
    assert not exp.metrics
    with open(exp.metrics_file_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["step"], r["loss"]) for r in rows] == [("0", "0.5"), ("7", "0.25")]
    assert (tmp_path / "exp" / "version_0" / "hparams.yaml").read_text().strip() == "lr: 0.1"


def test_experiment_is_a_no_op_off_rank_zero(tmp_path):
    logger = CSVLogger(tmp_path, name="exp", version=0)
    before = current_rank()
    set_rank(1)
    try:
        exp = logger.experiment
        exp.log_metrics({"loss": 1.0})
        exp.save()
    finally:
        set_rank(before)
    assert isinstance(exp, NoOpExperiment)
    assert not (tmp_path / "exp").exists()


def test_experiment_from_a_module_during_fit(tmp_path):
    """``self.logger.experiment.log_metrics`` from a training step lands in ``metrics.csv``."""

    class Model(BoringModel):
        def training_step(self, batch, batch_idx):
            self.logger.experiment.log_metrics({"custom": float(batch_idx)}, step=100 + batch_idx)
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                             limit_val_batches=0, logger=CSVLogger(tmp_path),
                             enable_checkpointing=False, enable_progress_bar=False)
    trainer.fit(Model())
    with open(trainer.logger.metrics_file_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["step"], r["custom"]) for r in rows if r.get("custom")] == [("100", "0.0"),
                                                                           ("101", "1.0")]
