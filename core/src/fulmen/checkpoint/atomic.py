"""Crash-safe writes: a temporary file beside the target, renamed over it when complete.

Temporary names carry the host and process id (``.<name>.tmp-<host>-<pid>-<n>``), so the next
save into the same folder can tell leftovers of a killed process (its pid is gone) from the
temporary files of a save still running, here or on another host sharing the folder.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

_HOST = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40] or "host"
_PATTERN = re.compile(r"^\..+\.tmp-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-\d+$")
_counter = itertools.count()


def temporary_name(name: str) -> str:
    """A fresh temporary name for a file called ``name``, identifying this process."""
    return f".{name}.tmp-{_HOST}-{os.getpid()}-{next(_counter)}"


def temporary_path(target: Path) -> Path:
    """A fresh temporary name beside ``target`` that identifies this process."""
    return target.with_name(temporary_name(target.name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def stale(name: str) -> bool:
    """Whether ``name`` is a temporary that a process of this host left when it died."""
    match = _PATTERN.match(name)
    return match is not None and match["host"] == _HOST and not _alive(int(match["pid"]))


def sweep(folder: Path) -> list[Path]:
    """Remove the temporary files (or folders) in ``folder`` that a process on this host left
    when it died mid-save; returns what was removed."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if not stale(entry.name):
                continue
            with contextlib.suppress(OSError):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed.append(entry)
    return removed


@contextlib.contextmanager
def atomic_target(target: Path) -> Iterator[Path]:
    """Yields a temporary path to write; on success it replaces ``target`` in one rename, on
    any exception it is removed. Leftovers of killed processes in the folder go first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target.parent)
    tmp = temporary_path(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def replace_directory(staging: Path, target: Path) -> None:
    """Move the folder ``staging`` to ``target``: an existing ``target`` is renamed aside first
    (two renames, so ``target`` is missing only between them) and deleted after the new one is
    in place. The deletion is not left to a background thread: whoever lists the folder after
    the save (a test, a sync job) must see only the checkpoint."""
    old = None
    if target.is_dir() and not target.is_symlink():
        old = temporary_path(target)
        os.replace(target, old)
    elif target.exists():
        target.unlink()
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
