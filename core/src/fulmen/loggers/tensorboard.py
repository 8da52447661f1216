"""``TensorBoardLogger``: event files that TensorBoard reads."""

from __future__ import annotations

import os
from typing import Any

from fulmen import storage
from fulmen.loggers.base import VersionedDir, VersionedLogger
from fulmen.loggers.csv import _plain


class TensorBoardLogger(VersionedLogger):
    """Writes ``<save_dir>/<name>/version_<N>/events.out.tfevents.*`` through
    ``torch.utils.tensorboard`` (needs the ``tensorboard`` package), plus ``hparams.yaml``."""

    def __init__(self, save_dir: str | os.PathLike[str] = ".", name: str = "fulmen_logs",
                 version: int | str | None = None, **writer_kwargs: Any) -> None:
        self._dir = VersionedDir(save_dir, name, version)
        self._writer_kwargs = writer_kwargs
        self._writer: Any = None
        self.hparams: dict[str, Any] = {}

    @property
    def experiment(self) -> Any:
        """The ``SummaryWriter`` (created on first use)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            storage.makedirs(self.log_dir)
            self._writer = SummaryWriter(log_dir=self.log_dir, **self._writer_kwargs)
        return self._writer

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_writer"] = None  # a writer holds an open file: each process makes its own
        return state

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        writer = self.experiment
        for key, value in metrics.items():
            writer.add_scalar(key, value, global_step=step)

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        import yaml

        self.hparams.update(params)
        with storage.open_file(storage.join(self.log_dir, "hparams.yaml"), "w") as handle:
            yaml.safe_dump(_plain(self.hparams), handle, sort_keys=True)
        plain = {k: v if isinstance(v, int | float | str | bool) else repr(v)
                 for k, v in self.hparams.items()}
        self.experiment.add_text("hparams", "\n".join(f"{k}: {v}" for k, v in plain.items()))

    def save(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def finalize(self, status: str) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
