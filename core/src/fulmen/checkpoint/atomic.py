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
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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
        old = _second_name(target)
        try:
            os.replace(tmp, target)
        finally:
            if old is not None:
                discard(old)
    except BaseException:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def _second_name(target: Path) -> Path | None:
    """A temporary hard link to the file ``target`` names now, so that the rename over
    ``target`` does not free its blocks (slow for a large file) inside the save; None when
    there is no such file or the filesystem has no hard links."""
    if not target.is_file() or target.is_symlink():
        return None
    old = temporary_path(target)
    try:
        os.link(target, old)
    except OSError:
        return None
    return old


def replace_directory(staging: Path, target: Path) -> None:
    """Move the folder ``staging`` to ``target``: an existing ``target`` is renamed aside first
    (two renames, no copy) and deleted in the background, so the save does not wait for its
    files to be freed."""
    old = None
    if target.is_dir() and not target.is_symlink():
        old = temporary_path(target)
        os.replace(target, old)
    elif target.exists():
        target.unlink()
    os.replace(staging, target)
    if old is not None:
        discard(old)


_discarding: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def discard(path: Path) -> Future[None]:
    """Delete ``path`` (a file or folder) on a background thread, which the interpreter joins
    at exit; a process killed first leaves it to the next save's :func:`sweep` (its name is a
    temporary one of this process)."""
    with _lock:
        pool = _discarding.get("pool")
        if pool is None:
            pool = _discarding["pool"] = ThreadPoolExecutor(1, "fulmen-discard")
    return pool.submit(_delete, path)


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
