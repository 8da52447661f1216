"""The ``Profiler`` base class (as Lightning's) and ``PassThroughProfiler`` (records nothing)."""

from __future__ import annotations

import contextlib
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger("fulmen.profiler")


class Profiler(ABC):
    """Subclass and implement ``start``/``stop`` (and ``summary``) to write your own.

    ``dirpath``/``filename``: where the summary goes (``<stage>-<filename>-<rank>.txt``); with no
    ``dirpath`` the Trainer's log directory is used, with no ``filename`` the summary is logged.
    """

    def __init__(self, dirpath: str | Path | None = None, filename: str | None = None) -> None:
        self.dirpath = dirpath
        self.filename = filename
        self._stage: str | None = None
        self._local_rank: int | None = None
        self._output: TextIO | None = None

    @abstractmethod
    def start(self, action_name: str) -> None:
        """Start recording ``action_name``."""

    @abstractmethod
    def stop(self, action_name: str) -> None:
        """Stop recording ``action_name``."""

    def summary(self) -> str:
        return ""

    @contextlib.contextmanager
    def profile(self, action_name: str) -> Iterator[str]:
        """Record the code inside the ``with`` block as ``action_name``."""
        try:
            self.start(action_name)
            yield action_name
        finally:
            self.stop(action_name)

    @property
    def local_rank(self) -> int:
        return 0 if self._local_rank is None else self._local_rank

    def setup(self, stage: str, local_rank: int | None = None, log_dir: str | None = None) -> None:
        """Called by the Trainer before a stage runs."""
        self._stage, self._local_rank = stage, local_rank
        self.dirpath = self.dirpath or log_dir

    def teardown(self, stage: str | None) -> None:
        """Close the output file, if any."""
        if self._output is not None:
            self._output.close()
            self._output = None

    def prepare_filename(self, action_name: str | None = None, extension: str = ".txt") -> str:
        """``<stage>-<filename>-<rank>[-<action>]<extension>``, path-safe."""
        parts = [p for p in (self._stage, self.filename) if p]
        if self._local_rank is not None:
            parts.append(str(self._local_rank))
        if action_name is not None:
            parts.append(action_name)
        base = re.sub(r"_+", "_", re.sub(r"[\\/:*?\"<>|\n\r\t]", "_", "-".join(parts))).strip()
        return (base or "profile") + extension

    def describe(self) -> None:
        """Write the summary: to the file, or to the ``fulmen.profiler`` logger (rank 0)."""
        text = self.summary()
        if text:
            if self.filename and self.dirpath:
                path = Path(self.dirpath) / self.prepare_filename()
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a") as out:
                    out.write(text + "\n")
            elif self.local_rank == 0:
                from fulmen.status import configure_logging

                configure_logging()
                log.info("%s", text)
        self.teardown(self._stage)

    def stage_title(self) -> str:
        return f"{self._stage.upper()} " if self._stage else ""

    def __getstate__(self) -> dict[str, Any]:  # ddp_spawn pickles the Trainer and its profiler
        return {**self.__dict__, "_output": None}


class PassThroughProfiler(Profiler):
    """Records nothing (``Trainer(profiler=None)``)."""

    def start(self, action_name: str) -> None:
        pass

    def stop(self, action_name: str) -> None:
        pass
