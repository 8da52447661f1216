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
nothing is read back), locally and to fsspec URLs alike. On load (:func:`load`) it is computed
from the bytes ``torch.load`` reads, as it reads them (:class:`HashingReader`: ``torch.load``
reads the file through it, in 4 MiB pieces that are summed while they are still in the
processor's cache), so the file is read once and nothing is held twice; the result is compared
before the dictionary is returned, so nothing reaches a model or optimizer first. A load that
maps the file instead of reading it (``mmap=True``) sums it in a thread beside ``torch.load``
(:func:`loading`). Files without the comment (written
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
_PIECE = 4 << 20  # bytes read at a time through HashingReader: summed while in the cache
_GAP = 1 << 20  # a jump forward this short is read and summed at once, a longer one later
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


def loading(path: Path | str, load: Callable[[], T]) -> T:
    """``load()`` (a ``torch.load`` that maps the file ``path`` rather than reading it), with
    the checksum of the file computed alongside in a thread and compared before the result is
    returned. When ``load`` raises and the bytes do not match, the mismatch is the error (it
    says why)."""
    path = Path(path)
    expected = stored_in(path)
    if expected is None:
        return load()
    length = path.stat().st_size - COMMENT - 2
    found: list[int | BaseException] = []

    def run() -> None:
        try:
            found.append(_crc_of_file(path, length))
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


class HashingReader(io.RawIOBase):
    """A read-only, seekable view of ``raw`` (a file opened for reading) for ``torch.load``,
    which computes the CRC-32C of the file's first ``length`` bytes from what ``torch.load``
    reads through it, while it reads.

    ``torch.load`` reads a zip: its end records first, then every record from the start, in
    file order, each straight into the tensor's memory (``readinto``). Each read is done in
    pieces of 4 MiB, each summed right after it lands; bytes ``torch.load`` jumps over (a
    record's header fields) are read and summed when the jump is short, and whatever was not
    summed by the end (the zip's central directory, read first) is read by :meth:`finish`. A
    file read out of order (a torch before 2.1 wrote records out of order) is still summed
    whole, reading its skipped parts twice.
    """

    def __init__(self, raw: Any, length: int) -> None:
        super().__init__()
        from crc32c import crc32c

        self._update = crc32c
        self._raw, self._length = raw, length
        self._crc = 0
        self._done = 0  # bytes [0, done) are summed
        self._position = raw.tell()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._position = self._raw.seek(offset, whence)
        return self._position

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        start = self._position
        if self._done < start <= self._done + _GAP:
            self._catch_up(start)
            self._raw.seek(start)
        count = 0
        while count < len(view):
            got = self._raw.readinto(view[count:count + _PIECE])
            if not got:
                break
            self._sum(start + count, view[count:count + got])
            count += got
        self._position = start + count
        return count

    def _sum(self, at: int, piece: memoryview) -> None:
        """Add the bytes of ``piece`` (file offset ``at``) that extend the summed prefix."""
        end = min(at + len(piece), self._length)
        if at <= self._done < end:
            self._crc = self._update(piece[self._done - at:end - at], self._crc)
            self._done = end

    def _catch_up(self, stop: int) -> None:
        """Read and sum the bytes from the end of the summed prefix up to ``stop``."""
        stop = min(stop, self._length)
        self._raw.seek(self._done)
        while self._done < stop:
            piece = self._raw.read(min(_CHUNK, stop - self._done))
            if not piece:
                break
            self._crc = self._update(piece, self._crc)
            self._done += len(piece)

    def finish(self) -> int:
        """Sum what ``torch.load`` did not read in order, and return the CRC-32C."""
        self._catch_up(self._length)
        if self._done < self._length:
            raise EOFError(f"the file ended after {self._done} of {self._length} bytes")
        return int(self._crc)


def load(path: Path | str, **torch_load: Any) -> Any:
    """``torch.load(path, **torch_load)`` for a local file; a stored CRC-32C is computed from
    the bytes ``torch.load`` reads (:class:`HashingReader`) and compared before the result is
    returned. With ``mmap=True`` (``torch.load`` maps the file, reading only its pickle) the
    file is summed in a thread beside it (:func:`loading`)."""
    import torch

    path = Path(path)
    if torch_load.get("mmap"):
        return loading(path, lambda: torch.load(path, **torch_load))
    if stored_in(path) is None:  # nothing to compare: torch reads the file its own way
        return torch.load(path, **torch_load)
    with open(path, "rb", buffering=0) as handle:
        return load_from(handle, path, **torch_load)


def load_from(handle: Any, where: Path | str, **torch_load: Any) -> Any:
    """``torch.load`` from ``handle`` (a seekable binary file: local, or fsspec's), its stored
    CRC-32C compared as in :func:`load`. ``where`` names the file in errors."""
    import torch

    size = handle.seek(0, io.SEEK_END)
    handle.seek(max(0, size - COMMENT - _EOCD_SIZE))
    expected = stored(handle.read(), where)
    handle.seek(0)
    if expected is None:
        return torch.load(handle, **torch_load)
    reader = HashingReader(handle, size - COMMENT - 2)
    try:
        result = torch.load(cast("IO[bytes]", reader), **torch_load)
    except BaseException:
        try:
            actual = f"{reader.finish():08x}"
        except Exception:
            actual = expected  # the read failed too: the load's own error says more
        if actual != expected:
            raise mismatch(where, expected, actual) from None
        raise
    actual = f"{reader.finish():08x}"
    if actual != expected:
        raise mismatch(where, expected, actual)
    return result


def describe(path: Path) -> dict[str, Any]:
    """What ``fulmen checkpoint inspect`` says about a file's checksum."""
    expected = stored_in(path)
    if expected is None:
        return {"crc32c": None, "note": "this file carries no checksum (written by plain "
                "torch.save or by a fulmen before checksums were stored in files); only the "
                "CRC-32 torch keeps per record can be checked"}
    return {"crc32c": expected, "note": "CRC-32C stored in the file, compared on every load"}


__all__ = ["COMMENT", "TAG", "HashingReader", "StampingWriter", "check", "describe", "load",
           "load_from", "loading", "mismatch", "problem", "save", "stamp", "stored", "stored_in"]
