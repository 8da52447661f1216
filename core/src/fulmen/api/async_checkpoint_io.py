"""``AsyncCheckpointIO``: checkpoints written in a background thread while training goes on."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from fulmen.api.checkpoint_io import CheckpointIO, PathLike, TorchCheckpointIO
from fulmen.errors import CheckpointSaveError


class AsyncCheckpointIO(CheckpointIO):
    """Wraps a ``CheckpointIO`` (default: :class:`TorchCheckpointIO`) so that saving returns as
    soon as the state is copied to CPU; the wrapped IO writes the copy in a background thread.

    At most one save is in flight: the next save waits for it. Removals (top-k rotation) and
    other file operations submitted with :meth:`after_pending` run after the saves before them,
    so the previous checkpoint is removed only once the new one is complete. A save that fails
    is raised (as :class:`fulmen.errors.CheckpointSaveError`) by the next call into this IO,
    by :meth:`raise_failure`, or at :meth:`teardown`, which waits for the save in flight.
    Pass it as ``Trainer(plugins=[AsyncCheckpointIO()])`` / ``Lite(plugins=[...])``, or use
    ``ModelCheckpoint(async_save=True)`` / ``lite.save(..., async_save=True)``.
    """

    name = "async"

    def __init__(self, checkpoint_io: CheckpointIO | None = None) -> None:
        self.checkpoint_io = checkpoint_io if checkpoint_io is not None else TorchCheckpointIO()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: list[tuple[Future[Any], str]] = []
        self._buffers: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ CheckpointIO

    def save_checkpoint(self, checkpoint: dict[str, Any], path: PathLike,
                        storage_options: Any | None = None) -> None:
        self.wait()  # one save in flight at most; a failure of the last one is raised here
        staged = self.stage(checkpoint)
        self._submit(f"save of {str(path)!r}", self.checkpoint_io.save_checkpoint, staged,
                     path, storage_options)

    def load_checkpoint(self, path: PathLike, map_location: Any | None = None,
                        weights_only: bool = True) -> dict[str, Any]:
        self.wait()
        return self.checkpoint_io.load_checkpoint(path, map_location, weights_only)

    def remove_checkpoint(self, path: PathLike) -> None:
        self._submit(f"removal of {str(path)!r}", self.checkpoint_io.remove_checkpoint, path)

    def teardown(self) -> None:
        """Wait for the save in flight (raising its failure), then stop the thread."""
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            self._buffers.clear()
            self.checkpoint_io.teardown()

    # ------------------------------------------------------------------ background work

    @property
    def in_flight(self) -> bool:
        """Whether a save or removal is still running or queued."""
        with self._lock:
            return any(not future.done() for future, _ in self._pending)

    def after_pending(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` in the writer thread after everything submitted before it (for
        example, pointing ``last`` at a checkpoint once that is written)."""
        self._submit(what, fn, *args)

    def raise_failure(self) -> None:
        """Raise the failure of a finished background save, if one failed; never blocks."""
        with self._lock:
            done = [(f, w) for f, w in self._pending if f.done()]
            self._pending = [(f, w) for f, w in self._pending if not f.done()]
        self._raise_first(done)

    def wait(self) -> None:
        """Block until everything submitted is written; raise the first failure."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future, _ in pending:
            future.exception()  # waits
        self._raise_first(pending)

    def stage(self, value: Any, key: tuple[Any, ...] = ()) -> Any:
        """A copy of ``value`` that training cannot change: tensors copied to CPU (into buffers
        kept from the previous save when shapes and dtypes match), containers rebuilt, other
        values shared (they are replaced, not changed in place, by training)."""
        import torch

        if isinstance(value, torch.Tensor):
            source = value.detach()
            buffer = self._buffers.get(key)
            if buffer is None or buffer.shape != source.shape or buffer.dtype != source.dtype \
                    or type(source) is not torch.Tensor:
                buffer = source.to("cpu", copy=True)
                if type(source) is torch.Tensor:
                    self._buffers[key] = buffer
            else:
                buffer.copy_(source)
            return buffer
        if isinstance(value, dict):  # a state dict's OrderedDict keeps its class and metadata
            staged = copy.copy(value)
            for k, v in value.items():
                staged[k] = self.stage(v, (*key, k))
            return staged
        if type(value) in (list, tuple):
            return type(value)(self.stage(v, (*key, i)) for i, v in enumerate(value))
        return value

    def _submit(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="fulmen-checkpoint")
        future = self._executor.submit(fn, *args)
        with self._lock:
            self._pending.append((future, what))

    @staticmethod
    def _raise_first(finished: list[tuple[Future[Any], str]]) -> None:
        for future, what in finished:
            error = future.exception()
            if error is not None:
                raise CheckpointSaveError(
                    f"the background {what} failed: {type(error).__name__}: {error}. The "
                    "checkpoints written before it are intact; fix the cause (space, "
                    "permissions, the store's credentials) and resume from the last one."
                ) from error
