"""Checkpoint files at fsspec URLs (``memory://``, ``s3://``, ``gs://``, ...).

The CRC-32C of each file is computed as it is uploaded and stored in it (see
:mod:`fulmen.checkpoint.filesum`); a load compares it before returning the content.

A save writes a temporary object beside the target and moves it over the target last, so a
reader never sees half a checkpoint under the real name (a move is atomic where the store
allows; elsewhere it is a copy committed last). A failed save removes its temporary object.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fulmen.errors import ConfigurationError
from fulmen.storage import filesystem, is_url, local

__all__ = ["filesystem", "is_url", "load", "local", "remove", "save"]


def save(checkpoint: dict[str, Any], url: str,
         storage_options: dict[str, Any] | None = None) -> None:
    from fulmen.checkpoint import filesum
    from fulmen.checkpoint.atomic import temporary_name

    fs, target = filesystem(url, storage_options, what="checkpoint path")
    parent, _, name = target.rpartition("/")
    sweep(fs, parent)
    tmp = f"{parent}/{temporary_name(name)}" if parent else temporary_name(name)
    try:
        with fs.open(tmp, "wb") as handle:
            filesum.save(checkpoint, handle)  # torch.save, with a CRC-32C in the file
        fs.mv(tmp, target)
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise


def sweep(fs: Any, folder: str) -> None:
    """Remove the temporary objects in ``folder`` left by processes of this host that died
    mid-save (as :func:`fulmen.checkpoint.atomic.sweep` does for local folders)."""
    from fulmen.checkpoint.atomic import stale

    try:
        entries = fs.ls(folder, detail=False) if fs.isdir(folder) else []
    except (OSError, FileNotFoundError):
        return
    for entry in entries:
        if stale(entry.rstrip("/").rpartition("/")[2]):
            with contextlib.suppress(OSError, FileNotFoundError):
                fs.rm(entry, recursive=True)


def load(url: str, map_location: Any = None, weights_only: bool = True) -> Any:
    """The checkpoint at ``url``, loaded as ``torch.load`` reads it (once, summed as it goes)."""
    import pickle

    from fulmen.checkpoint import filesum, safety

    fs, path = filesystem(url, what="checkpoint")
    if not fs.exists(path):
        raise ConfigurationError(f"checkpoint {url!r} does not exist")
    try:
        with fs.open(path, "rb") as handle:  # read once, as torch.load reads it, and summed
            return filesum.load_from(handle, url, map_location=map_location or "cpu",
                                     weights_only=weights_only)
    except safety.CorruptCheckpointError:
        raise
    except pickle.UnpicklingError as exc:
        if weights_only and safety.refused_global(exc):
            raise safety.unsafe_error(url, exc, safety.TRUST_HINT) from exc
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

