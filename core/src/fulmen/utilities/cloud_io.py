"""Lightning's ``lightning.fabric.utilities.cloud_io``: the fsspec filesystem of a path or URL,
and loading a ``torch.save`` file from a path, a URL or an open file (``pl_load``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import IO, Any

from fulmen.storage import filesystem

__all__ = ["get_filesystem", "load", "pl_load"]

log = logging.getLogger(__name__)


def get_filesystem(path: str | Path, **kwargs: Any) -> Any:
    """The fsspec filesystem for ``path`` (a local path, ``file://``, ``s3://``, ``memory://``
    ...); ``kwargs`` are the store's options."""
    return filesystem(str(path), kwargs, what="path")[0]


def load(path_or_url: IO[bytes] | str | Path, map_location: Any = None,
         weights_only: bool | None = None) -> Any:
    """``torch.load`` from an open file, an ``http(s)://`` URL (through ``torch.hub``; with
    ``weights_only=False`` unless given, as Lightning) or any path fsspec opens."""
    import torch

    if not isinstance(path_or_url, str | Path):
        return torch.load(path_or_url, map_location=map_location, weights_only=weights_only)
    if str(path_or_url).startswith("http"):
        if weights_only is None:
            weights_only = False
            log.debug("Defaulting to `weights_only=False` for remote checkpoint: %s. If loading a "
                      "checkpoint from an untrusted source, we recommend `weights_only=True`.",
                      path_or_url)
        return torch.hub.load_state_dict_from_url(str(path_or_url), map_location=map_location,
                                                  weights_only=weights_only)
    with get_filesystem(path_or_url).open(str(path_or_url), "rb") as handle:
        return torch.load(handle, map_location=map_location, weights_only=weights_only)


#: Lightning's name for :func:`load` (``from lightning.pytorch.core.saving import pl_load``)
pl_load = load
