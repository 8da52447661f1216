"""Folders and files at local paths or fsspec URLs, behind one set of functions.

Wherever fulmen takes a path (``default_root_dir``, ``ModelCheckpoint(dirpath=)``, ``ckpt_path``,
a logger's ``save_dir``), a URL works too: ``s3://bucket/run`` (with ``s3fs``), ``gs://``
(``gcsfs``), ``az://`` (``adlfs``), ``memory://``; ``file://x`` is the local path ``x``.
Options for a store (an endpoint, credentials) come from fsspec's configuration: the
environment variable ``FSSPEC_<SCHEME>_<OPTION>`` (``FSSPEC_S3_ENDPOINT_URL``), or
``fsspec.config.conf["s3"] = {...}``, or the store's own settings (``AWS_ENDPOINT_URL``).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from fulmen.errors import ConfigurationError

# The install hint per scheme when fulmen has an extra for it.
_EXTRAS = {"s3": "fulmen[s3]", "s3a": "fulmen[s3]"}


def is_url(path: Any) -> bool:
    """A URL with a scheme other than ``file://`` (those are local paths)."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


def local(path: Any) -> Any:
    """``file://x`` as the local path ``x``; anything else unchanged."""
    return path[len("file://"):] if isinstance(path, str) and path.startswith("file://") \
        else path


def filesystem(url: str, storage_options: dict[str, Any] | None = None,
               what: str = "path") -> tuple[Any, str]:
    """The fsspec filesystem for ``url`` and the path inside it. A scheme whose package is
    missing names the package to install; an unknown scheme lists the known ones."""
    scheme = url.split("://", 1)[0]
    try:
        import fsspec
        from fsspec.registry import known_implementations
    except ImportError as exc:
        raise ConfigurationError(f"{what} {url!r} is a URL; URLs need fsspec: pip install "
                                 "fsspec") from exc
    try:
        return fsspec.core.url_to_fs(url, **(storage_options or {}))
    except ImportError as exc:
        target = known_implementations.get(scheme, {}).get("class", "")
        package = target.split(".", 1)[0].replace("_", "-") or "the package for it"
        extra = f" (or pip install '{_EXTRAS[scheme]}')" if scheme in _EXTRAS else ""
        raise ConfigurationError(f"{what} {url!r}: the {scheme}:// scheme needs {package}, "
                                 f"which is not installed: pip install {package}{extra}"
                                 ) from exc
    except ValueError as exc:
        known = ", ".join(sorted(fsspec.available_protocols())[:30])
        raise ConfigurationError(f"{what} {url!r} has a scheme fsspec does not know "
                                 f"({scheme!r}); known schemes: {known}") from exc


def _text(path: str | os.PathLike[str]) -> str:
    return str(local(os.fspath(path)))


def check(path: str | os.PathLike[str] | None, what: str) -> None:
    """Refuse, before anything starts, a URL whose scheme is unknown or needs a package that is
    missing (``what`` names the argument in the error)."""
    if path is not None and is_url(local(os.fspath(path))):
        filesystem(os.fspath(path), what=what)


def normalize(path: str | os.PathLike[str]) -> str:
    """A folder as fulmen keeps it: a URL without a trailing ``/``; a local path absolute,
    ``~`` expanded and links resolved."""
    path = _text(path)
    if is_url(path):
        return str(path).rstrip("/")
    return os.path.realpath(os.path.expanduser(path))


def join(base: str | os.PathLike[str], *names: str) -> str:
    base = os.fspath(base)
    return posixpath.join(base, *names) if is_url(base) else os.path.join(base, *names)


def parent(path: str) -> str:
    return posixpath.dirname(path) if is_url(path) else os.path.dirname(path)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_url(path) else os.path.basename(path)


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies somewhere under ``folder``."""
    if is_url(path) or is_url(folder):
        return path.startswith(folder.rstrip("/") + "/")
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == \
        os.path.abspath(folder) and os.path.abspath(path) != os.path.abspath(folder)


def same(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    a, b = local(os.fspath(a)), local(os.fspath(b))
    if is_url(a) or is_url(b):
        return str(a).rstrip("/") == str(b).rstrip("/")
    return os.path.abspath(a) == os.path.abspath(b)


def exists(path: str | os.PathLike[str]) -> bool:
    path = _text(path)
    if is_url(path):
        fs, inner = filesystem(path)
        return bool(fs.exists(inner))
    return os.path.exists(path)


def isdir(path: str | os.PathLike[str]) -> bool:
    path = _text(path)
    if is_url(path):
        fs, inner = filesystem(path)
        return bool(fs.isdir(inner))
    return os.path.isdir(path)


def listdir(path: str | os.PathLike[str]) -> list[str]:
    """The names in a folder (empty when it does not exist)."""
    path = _text(path)
    if is_url(path):
        fs, inner = filesystem(path)
        if not fs.isdir(inner):
            return []
        fs.invalidate_cache(inner)
        return sorted(posixpath.basename(p.rstrip("/")) for p in fs.ls(inner, detail=False))
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def makedirs(path: str | os.PathLike[str]) -> None:
    """Create a folder (object stores have none: nothing to do there beyond fsspec's)."""
    path = _text(path)
    if is_url(path):
        fs, inner = filesystem(path)
        fs.makedirs(inner, exist_ok=True)
    else:
        os.makedirs(path, exist_ok=True)


def remove(path: str | os.PathLike[str]) -> None:
    """Delete a file, link or folder; nothing when it is not there."""
    path = _text(path)
    if is_url(path):
        fs, inner = filesystem(path)
        if fs.exists(inner):
            fs.rm(inner, recursive=fs.isdir(inner))
        return
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def copy(source: str, target: str) -> None:
    """Copy a file (or a checkpoint folder) within one store: server-side on object stores."""
    if is_url(source):
        fs, inner = filesystem(source)
        _, target_inner = filesystem(target)
        fs.copy(inner, target_inner, recursive=fs.isdir(inner))
    elif os.path.isdir(source):
        shutil.copytree(source, target)
    else:
        shutil.copy(source, target)


def mtime(path: str) -> float:
    """When ``path`` was last written, in seconds since the epoch."""
    if is_url(path):
        fs, inner = filesystem(path)
        return float(fs.modified(inner).timestamp())
    return os.stat(path).st_mtime_ns / 1e9


@contextlib.contextmanager
def local_copy(path: str, what: str = "checkpoint") -> Iterator[str]:
    """A local path holding what ``path`` holds: ``path`` itself when local, else a temporary
    download of the file or folder (removed afterwards), under the same name."""
    path = local(path)
    if not is_url(path):
        yield path
        return
    fs, inner = filesystem(path, what=what)
    if not fs.exists(inner):
        raise ConfigurationError(f"{what} {path!r} does not exist")
    with tempfile.TemporaryDirectory(prefix="fulmen-") as folder:
        target = os.path.join(folder, basename(path) or "checkpoint")
        fs.get(inner, target, recursive=fs.isdir(inner))
        yield target


def open_file(path: str | os.PathLike[str], mode: str = "r", **kwargs: Any) -> IO[Any]:
    """``open`` for a local path or a URL (the parent folder created when writing)."""
    path = _text(path)
    if is_url(path):
        fs, inner = filesystem(path)
        return fs.open(inner, mode, **kwargs)  # type: ignore[no-any-return,unused-ignore]
    if any(flag in mode for flag in "wa"):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return open(path, mode, **kwargs)
