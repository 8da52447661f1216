"""Lightning's distributed helpers: whether a folder is shared by all processes
(``is_shared_filesystem``) and DDP's ``prepare_for_backward`` for a forward run outside the
DDP wrapper."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fulmen.storage import is_url

__all__ = ["is_shared_filesystem", "prepare_for_backward"]


def is_shared_filesystem(strategy: Any, path: str | Path | None = None, timeout: int = 3) -> bool:
    """Whether ``path`` (the working directory by default) is one folder every process sees:
    rank 0 writes a file there and every process looks for it for up to ``timeout`` seconds.
    A URL (``s3://``...) and a single process count as shared. Call it on every process."""
    if path is not None and is_url(str(path)):
        return True
    folder = Path(Path.cwd() if path is None else path).resolve()
    if strategy.world_size == 1:
        return True
    rank_zero_path = strategy.broadcast(folder)
    if not strategy.reduce_boolean_decision(rank_zero_path == folder, all=True):
        return False
    if not strategy.reduce_boolean_decision(folder.exists(), all=True):
        raise FileNotFoundError("Unable to determine if the path belongs to a shared filesystem. "
                                f"The path does not exist: {folder}")
    folder = folder.parent if folder.is_file() else folder
    check_file = folder / ".lightning_shared_fs_check"
    check_file.unlink(missing_ok=True)
    strategy.barrier()
    if strategy.is_global_zero:
        check_file.touch()
        found = True
    else:
        start, found = time.perf_counter(), False
        while not found and time.perf_counter() - start < timeout:
            found = check_file.exists()
    strategy.barrier()
    all_found = strategy.reduce_boolean_decision(found, all=True)
    with contextlib.suppress(OSError):
        check_file.unlink()
    return bool(all_found)


def _tensors(obj: Any) -> Iterator[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return iter([obj])
    if isinstance(obj, list | tuple):
        return itertools.chain.from_iterable(map(_tensors, obj))
    if isinstance(obj, dict):
        return itertools.chain.from_iterable(map(_tensors, obj.values()))
    return iter([])


def prepare_for_backward(model: Any, output: Any) -> None:
    """What ``DistributedDataParallel.forward`` does before the backward of ``output``, for a
    forward that bypassed the wrapper (Lightning runs ``training_step`` so)."""
    import torch

    if torch.is_grad_enabled() and model.require_backward_grad_sync:
        model.require_forward_param_sync = True
        args = list(_tensors(output)) if model.find_unused_parameters and \
            not model.static_graph else []
        reducer = model.reducer
        reducer._rebuild_buckets()  # avoids "INTERNAL ASSERT FAILED" without unused parameters
        reducer.prepare_for_backward(args)
    else:
        model.require_forward_param_sync = False

