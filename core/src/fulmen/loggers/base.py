"""``Logger``: the interface the Trainer writes metrics and hyper-parameters to."""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from fulmen import storage

if TYPE_CHECKING:
    from fulmen.module import Module


class Logger(ABC):
    """Subclass and implement ``log_metrics`` and ``log_hyperparams``. The Trainer calls them
    on global rank zero only."""

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def version(self) -> int | str | None:
        return None

    @property
    def log_dir(self) -> str | None:
        return None

    def set_version(self, version: int | str | None) -> None:  # noqa: B027 - optional
        """Fix the version (all processes of a job use rank zero's)."""

    @abstractmethod
    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Record ``metrics`` at ``step``."""

    @abstractmethod
    def log_hyperparams(self, params: dict[str, Any]) -> None:
        """Record the run's hyper-parameters."""

    def log_graph(self, model: Module, input_array: Any = None) -> None:  # noqa: B027 - optional
        """Record the module's graph (the Trainer calls it once when fit starts, after
        ``log_hyperparams``). Default: nothing; ``TensorBoardLogger(log_graph=True)`` does."""

    def save(self) -> None:  # noqa: B027 - optional, nothing to flush by default
        """Flush what is buffered."""

    def finalize(self, status: str) -> None:
        """The run ended (``"success"`` or ``"failed"``); flush and close."""
        self.save()


class VersionedLogger(Logger):
    """A logger writing under ``<save_dir>/<name>/version_<N>``."""

    _dir: VersionedDir

    @property
    def name(self) -> str:
        return self._dir.name

    @property
    def version(self) -> int | str:
        return self._dir.version

    @property
    def save_dir(self) -> str:
        """The folder (or URL) the logger was given."""
        return self._dir.save_dir

    @property
    def root_dir(self) -> str:
        """``<save_dir>/<name>`` (``save_dir`` without a name): where the versions are."""
        name = self.name
        return storage.join(self.save_dir, name) if name else self.save_dir

    @property
    def log_dir(self) -> str:
        """``<root_dir>/version_<N>``, or ``<root_dir>/<version>`` for a string version (from
        ``name`` and ``version``, so a subclass that overrides them moves it too)."""
        version = self.version
        return storage.join(self.root_dir, version if isinstance(version, str)
                            else f"version_{version}")

    def set_version(self, version: int | str | None) -> None:
        self._dir.set_version(version)


def next_version(root: str) -> int:
    """The first unused ``version_N`` under ``root`` (a folder or a URL)."""
    taken = [int(m.group(1)) for name in storage.listdir(root)
             if (m := re.fullmatch(r"version_(\d+)", name))
             and storage.isdir(storage.join(root, name))]
    return max(taken) + 1 if taken else 0


class VersionedDir:
    """``<root>/<name>/version_<N>``, the version chosen when first needed, on rank zero's
    numbering (ranks agree through ``FULMEN_LOG_VERSION`` set by the first one)."""

    def __init__(self, root: str | os.PathLike[str], name: str | None,
                 version: int | str | None) -> None:
        storage.check(root, "logger save_dir")
        self._root, self._name, self._version = os.fspath(root), name, version

    @property
    def save_dir(self) -> str:
        return self._root

    @property
    def name(self) -> str:
        return self._name or ""

    @property
    def root_dir(self) -> str:
        return storage.join(self._root, self._name) if self._name else self._root

    def set_version(self, version: int | str | None) -> None:
        if version is not None:
            self._version = version

    @property
    def version(self) -> int | str:
        if self._version is None:
            self._version = next_version(self.root_dir)
        return self._version
