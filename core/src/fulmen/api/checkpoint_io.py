"""``CheckpointIO``: how checkpoint dictionaries reach storage and come back."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from fulmen.api.naming import Named
from fulmen.errors import ConfigurationError

PathLike = str | os.PathLike[str]


class CheckpointIO(Named, ABC):
    """Pass an instance in ``Trainer(plugins=[...])`` to store checkpoints your way."""

    @abstractmethod
    def save_checkpoint(self, checkpoint: dict[str, Any], path: PathLike,
                        storage_options: Any | None = None) -> None:
        """Write ``checkpoint`` to ``path``."""

    @abstractmethod
    def load_checkpoint(self, path: PathLike, map_location: Any | None = None,
                        weights_only: bool = True) -> dict[str, Any]:
        """Read the dictionary written by ``save_checkpoint``."""

    @abstractmethod
    def remove_checkpoint(self, path: PathLike) -> None:
        """Delete a checkpoint written by ``save_checkpoint``."""

    def teardown(self) -> None:
        """Release resources (open handles, thread pools)."""


class TorchCheckpointIO(CheckpointIO):
    """``torch.save`` to a temporary file in the target folder, then an atomic rename; the
    temporary files of a process killed mid-save are removed by the next save there. Every file
    carries a CRC-32C of its bytes (:mod:`fulmen.checkpoint.filesum`), compared on load."""

    name = "torch"

    def save_checkpoint(self, checkpoint: dict[str, Any], path: PathLike,
                        storage_options: Any | None = None) -> None:
        from fulmen.checkpoint import remote

        if remote.is_url(path):
            return remote.save(checkpoint, path, storage_options)  # type: ignore[arg-type]
        path = remote.local(path)
        if storage_options is not None:
            raise ConfigurationError(f"TorchCheckpointIO.save_checkpoint got storage_options="
                                     f"{storage_options!r} for the local path {str(path)!r}; "
                                     "storage options apply to URLs (s3://bucket/x.ckpt, ...) "
                                     "only. Drop them, or pass a URL.")
        from fulmen.checkpoint import filesum
        from fulmen.checkpoint.atomic import atomic_target

        with atomic_target(Path(path)) as tmp, open(tmp, "wb") as handle:
            filesum.save(checkpoint, handle)  # torch.save, with a CRC-32C in the file

    def load_checkpoint(self, path: PathLike, map_location: Any | None = None,
                        weights_only: bool | None = None) -> dict[str, Any]:
        return safe_load(path, map_location, weights_only)

    def remove_checkpoint(self, path: PathLike) -> None:
        from fulmen.checkpoint import remote

        if remote.is_url(path):
            return remote.remove(path)  # type: ignore[arg-type]
        Path(remote.local(path)).unlink(missing_ok=True)
        return None


def safe_load(path: PathLike, map_location: Any | None = None,
              weights_only: bool | None = None) -> Any:
    """``torch.load`` (``weights_only`` unless the user opts out: ``weights_only=False``, or
    torch's ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` with ``weights_only`` not given) with errors
    that say what to do; a file's stored CRC-32C is compared before its content is returned."""
    import pickle

    from fulmen.checkpoint import filesum, remote, safety

    weights_only = safety.resolve_weights_only(weights_only)
    if remote.is_url(path):
        return remote.load(path, map_location, weights_only)  # type: ignore[arg-type]
    path = Path(remote.local(path))
    safety.check_readable(path)
    try:
        return filesum.load(path, map_location=map_location or "cpu",
                            weights_only=weights_only)
    except safety.CorruptCheckpointError:
        raise
    except pickle.UnpicklingError as exc:
        if not weights_only:
            raise safety.damage_error(path, exc) from exc
        raise safety.refusal(path, exc, safety.TRUST_HINT) from exc
    except (RuntimeError, EOFError, ValueError, OSError) as exc:
        raise safety.damage_error(path, exc) from exc
