"""``TensorBoardLogger``: event files that TensorBoard reads."""

from __future__ import annotations

import os
from typing import Any

from fulmen import storage
from fulmen.loggers.base import VersionedDir, VersionedLogger
from fulmen.loggers.csv import _plain
from fulmen.loggers.tb_events import EventFile


class TensorBoardLogger(VersionedLogger):
    """Writes ``<save_dir>/<name>/version_<N>/events.out.tfevents.*`` that TensorBoard reads
    (needs the ``tensorboard`` package), plus ``hparams.yaml``.

    Metrics and hyper-parameters are written by the training process itself
    (:class:`~fulmen.loggers.tb_events.EventFile`, no writer thread); ``experiment`` is a
    ``torch.utils.tensorboard.SummaryWriter`` on the same folder, made when first used, for
    images, histograms and the rest. ``writer_kwargs`` go to it; ``flush_secs`` (default 120)
    and ``filename_suffix`` also apply to the metrics file."""

    def __init__(self, save_dir: str | os.PathLike[str] = ".", name: str = "fulmen_logs",
                 version: int | str | None = None, **writer_kwargs: Any) -> None:
        self._dir = VersionedDir(save_dir, name, version)
        self._writer_kwargs = writer_kwargs
        self._writer: Any = None
        self._events: EventFile | None = None
        self.hparams: dict[str, Any] = {}

    @property
    def experiment(self) -> Any:
        """The ``SummaryWriter`` (created on first use)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            storage.makedirs(self.log_dir)
            self._writer = SummaryWriter(log_dir=self.log_dir, **self._writer_kwargs)
        return self._writer

    @property
    def events(self) -> EventFile:
        """The file metrics and hyper-parameters go to (created on first use)."""
        if self._events is None:
            self._events = EventFile(self.log_dir, self._writer_kwargs.get("flush_secs", 120),
                                     self._writer_kwargs.get("filename_suffix", ""))
        return self._events

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        # a writer holds an open file: each process makes its own
        state["_writer"] = state["_events"] = None
        return state

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.events.scalars(metrics, step)

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        import yaml
        from torch.utils.tensorboard.summary import text

        self.hparams.update(params)
        with storage.open_file(storage.join(self.log_dir, "hparams.yaml"), "w") as handle:
            yaml.safe_dump(_plain(self.hparams), handle, sort_keys=True)
        plain = {k: v if isinstance(v, int | float | str | bool) else repr(v)
                 for k, v in self.hparams.items()}
        self.events.add(text("hparams", "\n".join(f"{k}: {v}" for k, v in plain.items())), 0)

    def save(self) -> None:
        if self._events is not None:
            self._events.flush()
        if self._writer is not None:
            self._writer.flush()

    def finalize(self, status: str) -> None:
        if self._events is not None:
            self._events.close()
            self._events = None
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
