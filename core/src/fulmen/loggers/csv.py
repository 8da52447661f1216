"""``CSVLogger``: metrics to ``metrics.csv``, hyper-parameters to ``hparams.yaml``."""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from fulmen import look, storage
from fulmen.api.logger import RunRecord, rank_zero_experiment
from fulmen.loggers.base import VersionedDir, VersionedLogger
from fulmen.loggers.utils import flatten


class CSVLogger(VersionedLogger):
    """Writes ``<save_dir>/<name>/version_<N>/metrics.csv`` (one row per step, a column per
    metric; the header grows when new metrics appear) and ``hparams.yaml``. No dependencies.
    ``save_dir`` may be an fsspec URL: there ``metrics.csv`` is rewritten whole at each flush
    (object stores cannot append). ``prefix`` starts every metric name (``"<prefix>-<name>"``),
    as in Lightning. ``name`` defaults to ``fulmen_logs`` (``lightning_logs`` under ``fulmen
    run``'s Lightning look, :mod:`fulmen.look`)."""

    LOGGER_JOIN_CHAR = "-"

    def __init__(self, save_dir: str | os.PathLike[str] = ".",
                 name: str = look.default_log_name(),  # lightning_logs under fulmen run
                 version: int | str | None = None, prefix: str = "",
                 flush_logs_every_n_steps: int = 100) -> None:
        self._dir = VersionedDir(save_dir, name, version)
        self._prefix = prefix
        self.flush_every = flush_logs_every_n_steps
        self._rows: list[dict[str, Any]] = []
        self._columns: list[str] = []
        self.hparams: dict[str, Any] = {}

    @property
    def metrics_file_path(self) -> str:
        return storage.join(self.log_dir, "metrics.csv")

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        """Lightning's ``ExperimentWriter`` for this logger (its folder is created on first
        use): ``log_metrics(metrics_dict, step=None)``, ``log_hparams(params)``, ``save()``,
        ``metrics`` (the rows not yet written), ``metrics_keys``, ``hparams``, ``log_dir``,
        ``metrics_file_path``. It writes through this logger, to the same files. On ranks other
        than zero, a no-op object (Lightning's ``DummyExperiment``)."""
        storage.makedirs(self.log_dir)
        return ExperimentWriter(self)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if self._prefix:
            metrics = {f"{self._prefix}{self.LOGGER_JOIN_CHAR}{k}": v for k, v in metrics.items()}
        row = {"step": step, **metrics}
        if self._rows and self._rows[-1]["step"] == step:
            self._rows[-1].update(row)  # same step: one row
        else:
            self._rows.append(row)
        if len(self._rows) >= self.flush_every:
            self.save()

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        import yaml

        self.hparams.update(params)
        with storage.open_file(storage.join(self.log_dir, "hparams.yaml"), "w") as handle:
            yaml.safe_dump(_plain(self.hparams), handle, sort_keys=True)

    def save(self) -> None:
        if not self._rows:
            return
        new = [k for row in self._rows for k in row if k not in self._columns]
        for key in new:
            if key not in self._columns:
                self._columns.append(key)
        path = self.metrics_file_path
        exists = storage.exists(path)
        if exists and (new or storage.is_url(path)):  # a wider header, or a store: rewrite
            with storage.open_file(path, "r", newline="") as handle:
                old = list(csv.DictReader(handle))
            rows, mode = old + self._rows, "w"
        else:
            rows, mode = self._rows, "a" if exists else "w"
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=self._columns, lineterminator="\n")
        if mode == "w":
            writer.writeheader()
        writer.writerows(rows)
        with storage.open_file(path, mode, newline="") as handle:
            handle.write(buffer.getvalue())
        self._rows = []


    def logged_steps(self) -> dict[str, int]:
        """The last step of each column already in the continued version's ``metrics.csv``."""
        return {key: max(step for step, _ in points)
                for key, points in self.read_run().metrics.items() if points}

    def read_run(self) -> RunRecord:
        """``metrics.csv`` and ``hparams.yaml`` read back (after a flush)."""
        import yaml

        metrics: dict[str, list[tuple[int, float]]] = {}
        if storage.exists(self.metrics_file_path):
            with storage.open_file(self.metrics_file_path, "r", newline="") as handle:
                for row in csv.DictReader(handle):
                    for key, value in row.items():
                        if key != "step" and value not in ("", None):
                            metrics.setdefault(key, []).append((int(row["step"]),
                                                                float(value)))
        params: dict[str, Any] = {}
        path = storage.join(self.log_dir, "hparams.yaml")
        if storage.exists(path):
            with storage.open_file(path, "r") as handle:
                params = flatten(yaml.safe_load(handle) or {})
        return RunRecord(metrics, params)


class ExperimentWriter:
    """``CSVLogger.experiment``: Lightning's ``ExperimentWriter`` API over a :class:`CSVLogger`
    (the same buffer and files; fulmen's one row per step applies)."""

    NAME_METRICS_FILE = "metrics.csv"
    NAME_HPARAMS_FILE = "hparams.yaml"

    def __init__(self, logger: CSVLogger) -> None:
        self.logger = logger

    @property
    def log_dir(self) -> str:
        return self.logger.log_dir

    @property
    def metrics_file_path(self) -> str:
        return self.logger.metrics_file_path

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """The rows recorded and not yet written to ``metrics.csv``."""
        return self.logger._rows

    @property
    def metrics_keys(self) -> list[str]:
        """The columns of ``metrics.csv`` so far."""
        return self.logger._columns

    @property
    def hparams(self) -> dict[str, Any]:
        return self.logger.hparams

    def log_metrics(self, metrics_dict: dict[str, Any], step: int | None = None) -> None:
        """Record one row (tensors as numbers; ``step`` None: the number of rows pending, as
        Lightning); written at :meth:`save`. No prefix, no flush (as Lightning's writer)."""
        import torch

        if step is None:
            step = len(self.metrics)
        row = {k: v.item() if isinstance(v, torch.Tensor) else v
               for k, v in metrics_dict.items()}
        rows = self.logger._rows
        if rows and rows[-1]["step"] == step:
            rows[-1].update(row)
        else:
            rows.append({"step": step, **row})

    def log_hparams(self, params: dict[str, Any]) -> None:
        """Add ``params`` to the hyper-parameters and rewrite ``hparams.yaml``."""
        self.logger.log_hyperparams(params)

    def save(self) -> None:
        """Write the pending rows to ``metrics.csv``."""
        self.logger.save()


def _plain(value: Any) -> Any:
    """YAML-safe copy: containers kept, modules and partials as ``class_path``/``init_args``,
    other objects written as their repr."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    from fulmen.references import NotReferable, encode

    try:  # a module or partial: its class_path and init_args, as in checkpoints
        encoded = encode(value)
    except NotReferable:
        return repr(value)
    return repr(encoded) if encoded is value else _plain(encoded)
