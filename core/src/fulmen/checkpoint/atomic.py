"""Crash-safe writes: a temporary file beside the target, renamed over it when complete.

A file replaces an existing one by exchanging the two names (Linux ``renameat2`` with
``RENAME_EXCHANGE``) and deleting the old one, not by renaming over it: ext4 forces the new
file's delayed blocks to disk when a rename replaces a file (``auto_da_alloc``), which made a
1 GiB save about twice as slow as ``torch.save`` writing over the file in place. Elsewhere (or
when the file system refuses the exchange) it is a plain ``os.replace``. Either way, the target
always names a complete checkpoint, and no temporary name is left once the save returns. The
old checkpoint's storage is freed in the background (see :func:`discard`).

Temporary names carry the host and process id (``.<name>.tmp-<host>-<pid>-<n>``), so the next
save into the same folder can tell leftovers of a killed process (its pid is gone) from the
temporary files of a save still running, here or on another host sharing the folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import itertools
import os
import re
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_HOST = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40] or "host"
_PATTERN = re.compile(r"^\..+\.tmp-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-\d+$")
_counter = itertools.count()


def temporary_name(name: str) -> str:
    """A fresh temporary name for a file called ``name``, identifying this process."""
    return f".{name}.tmp-{_HOST}-{os.getpid()}-{next(_counter)}"


def temporary_path(target: Path) -> Path:
    """A fresh temporary name beside ``target`` that identifies this process."""
    return target.with_name(temporary_name(target.name))


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_exchange_supported = sys.platform.startswith("linux")
_fadvise_supported = sys.platform.startswith("linux")


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` atomically; False where this system cannot."""
    global _exchange_supported
    if not _exchange_supported:
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a C library without renameat2 (glibc < 2.28, musl)
        _exchange_supported = False
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # not on this file system
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def replace_file(source: Path, target: Path) -> None:
    """Give the complete file ``source`` the name ``target`` in one atomic step, deleting what
    ``target`` named before (see the module's note on why it is not a rename over it)."""
    if target.is_file() and not target.is_symlink() and _exchange(source, target):
        discard(source)  # now the old checkpoint
    else:
        os.replace(source, target)


def fsync(path: Path) -> None:
    """Flush ``path``'s data to the device."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


def release_cached_pages(path: Path) -> None:
    """Give the page cache of the file ``path`` back to the system (Linux), for a file about to
    be replaced: the new file's pages then come from those just freed. Pages already written
    to disk are dropped; dirty ones are kept and their writeback starts (nothing is lost).

    Writing into pages the system has not used lately can cost far more than into recycled
    ones: on a virtual machine that hands its free memory back to the host, a 1 GiB save
    took 0.37 s or 1.5 s depending on which pages it got; ``torch.save`` over the old
    file recycles its pages by truncating it, which an atomic replacement cannot do."""
    if not _fadvise_supported:
        return
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_target(target: Path) -> Iterator[Path]:
    """Yields a temporary path to write; on success it replaces ``target`` in one rename, on
    any exception it is removed. Leftovers of killed processes in the folder go first, and
    the cached pages of the file it replaces are released (:func:`release_cached_pages`)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target.parent)
    if target.is_file() and not target.is_symlink():
        release_cached_pages(target)
    tmp = temporary_path(target)
    try:
        yield tmp
        if tmp.is_dir():
            os.replace(tmp, target)
        else:
            replace_file(tmp, target)
    except BaseException:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def replace_directory(staging: Path, target: Path) -> None:
    """Move the folder ``staging`` to ``target``, deleting what ``target`` was: exchanged in
    one step where the system can, otherwise renamed aside first (``target`` is missing only
    between two renames). Only the checkpoint is left in the folder when this returns."""
    if target.is_dir() and not target.is_symlink():
        if _exchange(staging, target):
            discard(staging)  # now the old checkpoint
            return
        old = temporary_path(target)
        os.replace(target, old)
        os.replace(staging, target)
        discard(old)
        return
    if target.exists() or target.is_symlink():
        target.unlink()
    os.replace(staging, target)


# The last close of a deleted file frees its blocks, which is slow where the file system
# discards freed blocks online (ext4 mounted with ``discard``: about 0.35 s per 512 MiB here).
# ``discard`` removes the names at once and leaves that last close to this thread.
_MAX_PENDING = 256  # open descriptors held for the closer at most; beyond, close at once
_closer: Any = None
_pending = 0
_lock = threading.Lock()


def discard(path: Path) -> None:
    """Delete the file or folder ``path``: no name of it is left when this returns, and its
    storage is freed by a background thread."""
    fds: list[int] = []
    try:
        if path.is_dir() and not path.is_symlink():
            for folder, dirs, files in os.walk(path, topdown=False):
                for name in files:
                    fds += _unlink_keeping_open(Path(folder, name))
                for name in dirs:
                    entry = Path(folder, name)
                    if entry.is_symlink():
                        entry.unlink()
                    else:
                        entry.rmdir()
            path.rmdir()
        else:
            fds += _unlink_keeping_open(path)
    except OSError:  # something it could not take apart: delete what it can, at once
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    _close_later(fds)


def _unlink_keeping_open(file: Path) -> list[int]:
    fd = -1
    with contextlib.suppress(OSError):
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        file.unlink()
    except OSError:
        if fd >= 0:
            os.close(fd)
        raise
    return [fd] if fd >= 0 else []


def _close_later(fds: list[int]) -> None:
    global _closer, _pending
    if not fds:
        return
    with _lock:
        if _pending + len(fds) > _MAX_PENDING:
            later: list[int] = []
        else:
            later, _pending = fds, _pending + len(fds)
            if _closer is None:
                from concurrent.futures import ThreadPoolExecutor

                _closer = ThreadPoolExecutor(1, thread_name_prefix="fulmen-discard")
    if not later:
        for fd in fds:
            os.close(fd)
        return
    _closer.submit(_close_all, later)


def _close_all(fds: list[int]) -> None:
    global _pending
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    with _lock:
        _pending -= len(fds)
