"""A CRC-32C inside every checkpoint file fulmen writes, compared whenever one is loaded.

**Where it lives: in the file.** ``torch.save`` writes a zip archive; its last record (the
"end of central directory") ends with a comment field, empty as torch writes it. fulmen puts
``fulmen-crc32c:<8 hex digits>`` there: the CRC-32C of every byte before that field's 2-byte
length. The file stays a valid zip that ``torch.load``, ``zipfile`` and every zip tool read
unchanged. A sidecar (``x.ckpt.crc32c``) was declined: two names cannot be replaced in one
atomic step (a crash between them leaves a checkpoint that fails its own check, or a stale
checksum that passes a swapped file), object stores (fsspec) have no multi-object commit at all,
and every copy, move, symlink or ``aws s3 cp`` of a checkpoint would have to carry the second
file. In the file, the checksum is written, renamed, copied and deleted with what it guards.

It is computed while the file is written (:class:`StampingWriter` sees every byte once, so
nothing is read back), locally and to fsspec URLs alike. On load the file is checksummed in a
thread while ``torch.load`` reads it, and the result is compared before the dictionary is
returned, so nothing reaches a model or optimizer first. Files without the comment (written
before this, or by plain ``torch.save``) load as before; ``fulmen checkpoint inspect`` says they
carry no checksum.

The checksum guards against damage (bit rot, a bad copy, a truncated upload), not tampering.
"""

from __future__ import annotations

import io
import mmap
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar, cast

TAG = b"fulmen-crc32c:"
COMMENT = len(TAG) + 8  # bytes of the comment fulmen writes
_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22  # the record without its comment; its last 2 bytes are the comment's length
_CHUNK = 64 << 20
T = TypeVar("T")


class StampingWriter(io.RawIOBase):
    """A write-only stream for ``torch.save`` that passes every byte on to ``raw`` and keeps
    the CRC-32C of all but the last two (the zip comment's length); :meth:`finish` writes the
    comment. Nothing is read back, and ``raw`` need not seek (an fsspec upload)."""

    def __init__(self, raw: Any) -> None:
        super().__init__()
        from crc32c import crc32c

        self._update = crc32c
        self._raw = raw
        self._crc = 0
        self._held = b""  # the last two bytes seen: they are not summed until more follow
        self._tail = b""  # the last _EOCD_SIZE bytes seen

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        count = len(view)
        if count == 0:
            return 0
        if count >= 2:
            if self._held:
                self._crc = self._update(self._held, self._crc)
                self._raw.write(self._held)
            body = view[:-2]
            self._crc = self._update(body, self._crc)
            self._raw.write(body)
            self._held = bytes(view[-2:])
        else:
            joined = self._held + bytes(view)
            if len(joined) > 2:
                self._crc = self._update(joined[:-2], self._crc)
                self._raw.write(joined[:-2])
            self._held = joined[-2:]
        self._tail = (self._tail + bytes(view[-_EOCD_SIZE:]))[-_EOCD_SIZE:]
        return count

    def flush(self) -> None:
        flush = getattr(self._raw, "flush", None)
        if flush is not None:
            flush()

    def finish(self) -> bool:
        """Write the held bytes; as the comment, when what was written ends in a zip's end
        record with an empty comment (True), else unchanged (False)."""
        stamped = self._tail[:4] == _EOCD and self._held == b"\x00\x00"
        if stamped:
            self._raw.write(struct.pack("<H", COMMENT) + TAG + f"{self._crc:08x}".encode())
        else:
            self._raw.write(self._held)
        self._held = b""
        return stamped


def save(checkpoint: Any, handle: Any) -> None:
    """``torch.save(checkpoint, handle)`` with the checksum in the file's zip comment."""
    import torch

    writer = StampingWriter(handle)
    torch.save(checkpoint, cast("IO[bytes]", writer))
    writer.finish()


def stamp(path: Path) -> bool:
    """Add the checksum to a file ``torch.save`` wrote in place (``convert`` patches its
    records after saving); False when the file does not end as torch.save ends a zip."""
    size = path.stat().st_size
    if size < _EOCD_SIZE:
        return False
    with open(path, "r+b") as handle:
        handle.seek(size - _EOCD_SIZE)
        tail = handle.read(_EOCD_SIZE)
        if tail[:4] != _EOCD or tail[-2:] != b"\x00\x00":
            return False
        value = _crc_of_file(path, size - 2)
        handle.seek(size - 2)
        handle.write(struct.pack("<H", COMMENT) + TAG + f"{value:08x}".encode())
    return True


def stored(tail: bytes, where: Path | str = "<bytes>") -> str | None:
    """The checksum in a file whose last bytes are ``tail`` (at least ``COMMENT + 22``), or
    None when it carries none. A file cut short inside its stamp is refused as truncated."""
    end = tail[-(COMMENT + _EOCD_SIZE):]
    at = end.rfind(_EOCD)
    if at > 0 and at + _EOCD_SIZE <= len(end) and \
            struct.unpack("<H", end[at + 20:at + 22])[0] == COMMENT and \
            TAG.startswith(end[at + 22:at + 22 + len(TAG)]):
        from fulmen.errors import CorruptCheckpointError

        raise CorruptCheckpointError(
            f"checkpoint file {str(where)!r} is truncated or corrupt: it ends "
            f"{len(end) - at - _EOCD_SIZE} bytes into the {COMMENT}-byte checksum fulmen "
            f"writes last, so the save or copy that wrote it did not finish")
    if len(end) < COMMENT + _EOCD_SIZE or end[:4] != _EOCD:
        return None
    if struct.unpack("<H", end[20:22])[0] != COMMENT or not end[22:].startswith(TAG):
        return None
    digits = end[22 + len(TAG):].decode("ascii", "replace")
    return digits if all(c in "0123456789abcdef" for c in digits) else None


def stored_in(path: Path) -> str | None:
    """The checksum stored in the file ``path``, or None."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - COMMENT - _EOCD_SIZE))
        return stored(handle.read(), path)


def _crc_of_file(path: Path, length: int) -> int:
    """CRC-32C of the first ``length`` bytes of ``path``, through a memory map (no copy)."""
    from crc32c import crc32c

    value = 0
    if length <= 0:
        return value
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if sys.platform.startswith("linux"):  # read ahead: the file is read once, in order
            m.madvise(mmap.MADV_SEQUENTIAL)
        view = memoryview(m)
        try:
            for start in range(0, length, _CHUNK):
                value = crc32c(view[start:min(length, start + _CHUNK)], value)
        finally:
            view.release()
    return value


def _crc_of_bytes(data: Any, length: int) -> int:
    from crc32c import crc32c

    return int(crc32c(memoryview(data)[:length]))


def mismatch(path: Path | str, expected: str, actual: str) -> Exception:
    from fulmen.errors import CorruptCheckpointError

    return CorruptCheckpointError(
        f"checkpoint file {str(path)!r} is corrupt: its bytes do not match the CRC-32C fulmen "
        f"stored in it when it was saved (stored {expected}, computed {actual}), so a byte "
        f"changed on disk or in a copy. fulmen did not load it; restore it from a good copy "
        f"(fulmen checkpoint verify {str(path)!r} checks a file without loading it)")


def check(path: Path) -> None:
    """Raise :class:`~fulmen.checkpoint.safety.CorruptCheckpointError` when ``path`` carries a
    checksum its bytes do not match."""
    expected = stored_in(path)
    if expected is None:
        return
    actual = f"{_crc_of_file(path, path.stat().st_size - COMMENT - 2):08x}"
    if actual != expected:
        raise mismatch(path, expected, actual)


def problem(path: Path) -> str | None:
    """:func:`check`'s finding as text (for ``fulmen checkpoint verify``), or None."""
    try:
        check(path)
    except Exception as exc:
        return str(exc)
    return None


def loading(path: Path | str, load: Callable[[], T], data: Any = None) -> T:
    """``load()``, with the checksum of the file ``path`` (or of its bytes ``data``, read
    already) computed alongside in a thread and compared before the result is returned. When
    ``load`` raises and the bytes do not match, the mismatch is the error (it says why)."""
    if data is not None:
        expected = stored(bytes(memoryview(data)[-(COMMENT + _EOCD_SIZE):]), path)
        length = len(data) - COMMENT - 2

        def compute() -> int:
            return _crc_of_bytes(data, length)
    else:
        path = Path(path)
        expected = stored_in(path)
        length = path.stat().st_size - COMMENT - 2 if expected else 0

        def compute() -> int:
            return _crc_of_file(Path(path), length)
    if expected is None:
        return load()
    found: list[int | BaseException] = []

    def run() -> None:
        try:
            found.append(compute())
        except BaseException as exc:  # reported by the caller's thread
            found.append(exc)

    worker = threading.Thread(target=run, name="fulmen-crc32c", daemon=True)
    worker.start()
    try:
        result = load()
    except BaseException:
        worker.join()
        if found and isinstance(found[0], int) and f"{found[0]:08x}" != expected:
            raise mismatch(path, expected, f"{found[0]:08x}") from None
        raise
    worker.join()
    if isinstance(found[0], BaseException):
        raise found[0]
    actual = f"{found[0]:08x}"
    if actual != expected:
        raise mismatch(path, expected, actual)
    return result


def describe(path: Path) -> dict[str, Any]:
    """What ``fulmen checkpoint inspect`` says about a file's checksum."""
    expected = stored_in(path)
    if expected is None:
        return {"crc32c": None, "note": "this file carries no checksum (written by plain "
                "torch.save or by a fulmen before checksums were stored in files); only the "
                "CRC-32 torch keeps per record can be checked"}
    return {"crc32c": expected, "note": "CRC-32C stored in the file, compared on every load"}


__all__ = ["COMMENT", "TAG", "StampingWriter", "check", "describe", "loading", "mismatch",
           "problem", "save", "stamp", "stored", "stored_in"]
