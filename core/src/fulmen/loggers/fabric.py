"""Lightning Fabric's ``CSVLogger`` and ``TensorBoardLogger`` (``lightning.fabric.loggers``):
fulmen's loggers with Fabric's signature and layout. Fabric's loggers take ``root_dir`` (not
``save_dir``), default ``name`` to ``"lightning_logs"``, write to
``<root_dir>/<name>/version_<N>`` and report ``root_dir`` as the folder given."""

from __future__ import annotations

import os
from typing import Any

from fulmen.loggers.csv import CSVLogger
from fulmen.loggers.tensorboard import TensorBoardLogger

__all__ = ["FabricCSVLogger", "FabricTensorBoardLogger"]


class FabricCSVLogger(CSVLogger):
    """Fabric's ``CSVLogger(root_dir, name="lightning_logs", version=None, prefix="",
    flush_logs_every_n_steps=100)``: metrics to ``<root_dir>/<name>/version_<N>/metrics.csv``."""

    def __init__(self, root_dir: str | os.PathLike[str], name: str | None = "lightning_logs",
                 version: int | str | None = None, prefix: str = "",
                 flush_logs_every_n_steps: int = 100) -> None:
        super().__init__(save_dir=root_dir, name=name or "", version=version, prefix=prefix,
                         flush_logs_every_n_steps=flush_logs_every_n_steps)
        self._calls = 0

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        """``step`` None: the number of earlier calls, as Fabric's ``CSVLogger``."""
        super().log_metrics(metrics, self._calls if step is None else step)
        self._calls += 1

    @property
    def root_dir(self) -> str:
        """The folder given (Fabric's meaning; the versions are under ``<root_dir>/<name>``)."""
        return self.save_dir

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> FabricCSVLogger:
        return cls(**{"root_dir": root_dir, **kwargs})


class FabricTensorBoardLogger(TensorBoardLogger):
    """Fabric's ``TensorBoardLogger(root_dir, name="lightning_logs", version=None,
    default_hp_metric=True, prefix="", sub_dir=None, **kwargs)``: events under
    ``<root_dir>/<name>/version_<N>[/<sub_dir>]``; ``kwargs`` go to the ``SummaryWriter``."""

    def __init__(self, root_dir: str | os.PathLike[str], name: str | None = "lightning_logs",
                 version: int | str | None = None, default_hp_metric: bool = True,
                 prefix: str = "", sub_dir: str | os.PathLike[str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(save_dir=root_dir, name=name or "", version=version,
                         default_hp_metric=default_hp_metric, prefix=prefix, sub_dir=sub_dir,
                         **kwargs)

    @property
    def root_dir(self) -> str:
        """The folder given (Fabric's meaning; the versions are under ``<root_dir>/<name>``)."""
        return self.save_dir

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> FabricTensorBoardLogger:
        return cls(**{"root_dir": root_dir, **kwargs})
