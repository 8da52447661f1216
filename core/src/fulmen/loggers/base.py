"""Shared pieces of the file-writing loggers (CSV, TensorBoard): ``<save_dir>/<name>/version_<N>``.
``Logger`` itself is :class:`fulmen.api.Logger`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from fulmen import storage
from fulmen.api.logger import Logger

__all__ = ["Logger", "VersionedDir", "VersionedLogger", "next_version"]


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
    def versions_dir(self) -> str:
        """``<save_dir>/<name>`` (``save_dir`` without a name): where the versions are."""
        name = self.name
        return storage.join(self.save_dir, name) if name else self.save_dir

    @property
    def root_dir(self) -> str:
        """:attr:`versions_dir` (Lightning's ``root_dir`` of its Trainer loggers)."""
        return self.versions_dir

    @property
    def log_dir(self) -> str:
        """``<versions_dir>/version_<N>``, or ``<versions_dir>/<version>`` for a string version
        (from ``name`` and ``version``, so a subclass that overrides them moves it too)."""
        version = self.version
        return storage.join(self.versions_dir, version if isinstance(version, str)
                            else f"version_{version}")

    def set_version(self, version: int | str | None) -> None:
        self._dir.set_version(version)

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> Logger:
        """Selected by name: writes under the Trainer's ``default_root_dir``."""
        return cls(**{"save_dir": root_dir, **kwargs})

    def state_dict(self) -> dict[str, Any]:
        """The version: a resumed fit writes on in the same ``version_<N>`` folder."""
        return {"version": self.version}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("version") is not None:
            self.set_version(state["version"])


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
