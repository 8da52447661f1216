"""Checkpoint files at fsspec URLs (``memory://``, ``s3://``, ``gs://``, ...).

A save writes a temporary object beside the target and moves it over the target last, so a
reader never sees half a checkpoint under the real name (a move is atomic where the store
allows; elsewhere it is a copy committed last). A failed save removes its temporary object.
"""

from __future__ import annotations

import io
from typing import Any

from fulmen.errors import ConfigurationError


def is_url(path: Any) -> bool:
    """A URL with a scheme other than ``file://`` (those are local paths)."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


def local(path: Any) -> Any:
    """``file://x`` as the local path ``x``; anything else unchanged."""
    return path[len("file://"):] if isinstance(path, str) and path.startswith("file://") \
        else path


def filesystem(url: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """The fsspec filesystem for ``url`` and the path inside it, with errors that say which
    package a scheme needs."""
    scheme = url.split("://", 1)[0]
    try:
        import fsspec
    except ImportError as exc:
        raise ConfigurationError(f"checkpoint path {url!r} is a URL; URLs need fsspec: pip "
                                 "install fsspec") from exc
    try:
        fs, inner = fsspec.core.url_to_fs(url, **(storage_options or {}))
    except ImportError as exc:
        raise ConfigurationError(f"checkpoint path {url!r}: the {scheme}:// scheme needs a "
                                 f"package that is not installed ({exc})") from exc
    except ValueError as exc:
        known = ", ".join(sorted(fsspec.available_protocols())[:30])
        raise ConfigurationError(f"checkpoint path {url!r} has a scheme fsspec does not know "
                                 f"({scheme!r}); known schemes: {known}") from exc
    return fs, inner


def save(checkpoint: dict[str, Any], url: str,
         storage_options: dict[str, Any] | None = None) -> None:
    import torch

    from fulmen.checkpoint.atomic import temporary_name

    fs, target = filesystem(url, storage_options)
    parent, _, name = target.rpartition("/")
    tmp = f"{parent}/{temporary_name(name)}" if parent else temporary_name(name)
    try:
        with fs.open(tmp, "wb") as handle:
            torch.save(checkpoint, handle)
        fs.mv(tmp, target)
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise


def load(url: str, map_location: Any = None, weights_only: bool = True) -> Any:
    """The checkpoint at ``url``, read whole and loaded like a local file."""
    import pickle

    import torch

    from fulmen.api.checkpoint_io import TRUST_HINT
    from fulmen.checkpoint import safety

    fs, path = filesystem(url)
    if not fs.exists(path):
        raise ConfigurationError(f"checkpoint {url!r} does not exist")
    with fs.open(path, "rb") as handle:
        data = handle.read()
    try:
        return torch.load(io.BytesIO(data), map_location=map_location or "cpu",
                          weights_only=weights_only)
    except pickle.UnpicklingError as exc:
        if weights_only and safety.refused_global(exc):
            raise safety.unsafe_error(url, exc, TRUST_HINT) from exc
        raise safety.CorruptCheckpointError(f"checkpoint {url!r} is truncated or corrupt "
                                            f"({str(exc).strip().splitlines()[0]})") from exc
    except (RuntimeError, EOFError, ValueError) as exc:
        raise safety.CorruptCheckpointError(
            f"checkpoint {url!r} is truncated or corrupt, or not a torch checkpoint "
            f"({type(exc).__name__}: {str(exc).strip().splitlines()[0]})") from exc


def remove(url: str) -> None:
    fs, path = filesystem(url)
    if fs.exists(path):
        fs.rm(path, recursive=fs.isdir(path))

