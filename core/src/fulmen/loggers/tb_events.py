"""A TensorBoard event file written in the training process itself, without a writer thread.

``torch.utils.tensorboard.SummaryWriter`` hands every event to a thread that frames and writes
it; on a busy process that thread has to take the interpreter lock from the training loop,
and the training loop then waits for it (measured in ``tests/benchmarks/trainer_overhead.py``).
Framing a record here costs a few microseconds, so events are framed at once and written
through a buffered file, flushed every ``flush_secs`` and when the logger saves or finishes.
The events are TensorBoard's own ``Event`` and ``Summary`` protos, framed as TFRecords exactly as
its ``RecordWriter`` frames them, with the CRC-32C from the ``crc32c`` package (TensorBoard's
without TensorFlow is pure Python: about 1000 bytecodes per record, on the training thread).
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from typing import IO, Any

from crc32c import crc32c

from fulmen import storage

_opened = itertools.count()  # files this process opened: two in one second get two names


class EventFile:
    """``events.out.tfevents.<time>.<host>.<pid>.<n>.fulmen<suffix>`` in ``log_dir``, opened
    on the first event (``n`` counts the files this process opened)."""

    def __init__(self, log_dir: str, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.log_dir, self.flush_secs, self.suffix = log_dir, flush_secs, filename_suffix
        self._file: IO[bytes] | None = None
        self._flushed = 0.0
        self.path: str | None = None  # the file, once the first event opened it

    def scalars(self, values: dict[str, float], step: int | None) -> None:
        """One event holding every scalar."""
        from tensorboard.compat.proto.summary_pb2 import Summary

        self.add(Summary(value=[Summary.Value(tag=key, simple_value=float(value))
                                for key, value in values.items()]), step)

    def add(self, summary: Any, step: int | None = None) -> None:
        """Write a ``Summary`` proto as one event at ``step``."""
        from tensorboard.compat.proto.event_pb2 import Event

        event = Event(wall_time=time.time(), summary=summary)
        if step is not None:
            event.step = int(step)
        self._write(event)

    def _write(self, event: Any) -> None:
        file = self._file if self._file is not None else self._open()
        file.write(frame(event.SerializeToString()))
        if time.monotonic() - self._flushed >= self.flush_secs:
            self.flush()

    def _open(self) -> IO[bytes]:
        from tensorboard.compat.proto.event_pb2 import Event

        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_opened)}.fulmen{self.suffix}")
        self.path = storage.join(self.log_dir, name)
        self._file = file = storage.open_file(self.path, "wb")
        version = Event(wall_time=time.time(), file_version="brain.Event:2")
        file.write(frame(version.SerializeToString()))
        return file

    def flush(self) -> None:
        self._flushed = time.monotonic()
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _masked_crc(data: bytes) -> bytes:
    crc = crc32c(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def frame(data: bytes) -> bytes:
    """``data`` as one TFRecord: its length (little-endian uint64) and that length's masked
    CRC-32C, the data, and the data's masked CRC-32C."""
    length = struct.pack("<Q", len(data))
    return length + _masked_crc(length) + data + _masked_crc(data)
