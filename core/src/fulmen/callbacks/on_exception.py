"""``OnExceptionCheckpoint``: save a checkpoint when training fails."""

from __future__ import annotations

import os
from typing import Any

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.checkpoint import service
from fulmen.errors import ConfigurationError


class OnExceptionCheckpoint(Callback):
    """Write ``dirpath/filename.ckpt`` when an exception stops a run (to resume from with
    ``ckpt_path=``); the file is removed again at teardown of a run that ends normally."""

    FILE_EXTENSION = ".ckpt"

    def __init__(self, dirpath: str | os.PathLike[str], filename: str = "on_exception") -> None:
        arguments.check_path("OnExceptionCheckpoint", "dirpath", dirpath, optional=False)
        if not filename:
            raise ConfigurationError(f"OnExceptionCheckpoint(dirpath={os.fspath(dirpath)!r}, "
                                     "filename=''): the filename cannot be empty; give a name "
                                     "without the extension, e.g. 'on_exception'")
        self.dirpath = os.fspath(dirpath)
        self.filename = filename
        self._failed = False

    @property
    def ckpt_path(self) -> str:
        return os.path.join(self.dirpath, self.filename + self.FILE_EXTENSION)

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self._failed = False

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        self._failed = True
        trainer.save_checkpoint(self.ckpt_path)

    def teardown(self, trainer: Any, module: Any, stage: str) -> None:
        if not self._failed and os.path.exists(self.ckpt_path):
            service.remove(trainer.strategy, self.ckpt_path)
