"""Loading checkpoint files without running code from them.

Every file is read with ``torch.load(weights_only=True)``: the unpickler builds tensors,
containers and the classes on an allow-list, and refuses any other Python global (a payload
that would run code). :func:`weights_only_everywhere` extends that to third-party code that
calls ``torch.load(weights_only=False)`` itself (DeepSpeed does).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fulmen.errors import ConfigurationError, CorruptCheckpointError, UnsafeCheckpointError
from fulmen.utilities.rank_zero import WarningCache

TRUST_HINT = (" If you trust the file, load it with weights_only=False (for example "
              "trainer.fit(model, ckpt_path=..., weights_only=False)).")

_FORCE = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"
_FORCE_NOT = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")
ZIP_MAGIC = b"PK\x03\x04"
_OPT_OUT = WarningCache()
PICKLE_MAGIC = b"\x80"


_TRUE = ("1", "y", "yes", "true")


def resolve_weights_only(weights_only: bool | None) -> bool:
    """Whether a load is restricted to weights, by torch's rules, as Lightning leaves it to
    ``torch.load``: the user's ``True``/``False`` when given; else (None) True, unless
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` is set (the user's opt-out of safe loading); and
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` makes every load safe."""
    if os.environ.get(_FORCE, "0").lower() in _TRUE:
        return True
    if weights_only is not None:
        return bool(weights_only)
    if os.environ.get(_FORCE_NOT, "0").lower() in _TRUE:
        _OPT_OUT.warn(f"{_FORCE_NOT} is set and weights_only was not given: checkpoints are "
                      "loaded with weights_only=False (full unpickling, which can run code "
                      "from the file), as torch.load does. Unset it to load safely.",
                      category=UserWarning)
        return False
    return True


def load_file(path: str | os.PathLike[str], *, allow: Sequence[Any] = (),
              map_location: Any = "cpu", mmap: bool = False) -> Any:
    """``torch.load(path, weights_only=True)`` with the classes in ``allow`` accepted too.

    Raises :class:`UnsafeCheckpointError` (naming the file and the refused global) for a file
    that would run code, and :class:`CorruptCheckpointError` for a damaged one (its stored
    CRC-32C, when it has one, is compared before the content is returned).
    """
    import torch

    from fulmen.checkpoint import filesum

    path = Path(path)
    check_readable(path)

    def load() -> Any:
        with torch.serialization.safe_globals(list(allow)):
            return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)

    try:
        return filesum.loading(path, load)
    except CorruptCheckpointError:
        raise
    except pickle.UnpicklingError as exc:
        raise refusal(path, exc) from exc
    except (RuntimeError, EOFError, ValueError, OSError) as exc:
        raise damage_error(path, exc) from exc


def check_files(paths: Iterable[Path], allow: Sequence[Any] = ()) -> None:
    """Open every file safely (tensors memory-mapped, not read): refuse the first one that
    would run code or is damaged, before anything else touches them."""
    for path in paths:
        load_file(path, allow=allow, mmap=zipfile.is_zipfile(path))


@contextlib.contextmanager
def weights_only_everywhere(allow: Sequence[Any] = ()) -> Iterator[None]:
    """Within the block, every ``torch.load`` in this process is ``weights_only=True`` (even a
    library's ``torch.load(..., weights_only=False)``), with ``allow`` on the allow-list.

    Uses torch's documented ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` switch, so it also covers other
    threads while it lasts: they only get stricter.
    """
    import torch

    saved = {name: os.environ.pop(name, None) for name in (_FORCE, _FORCE_NOT)}
    os.environ[_FORCE] = "1"
    present = torch.serialization.get_safe_globals()
    try:  # (only what is not there yet: leaving the block must not drop an outer block's)
        with torch.serialization.safe_globals([g for g in allow if g not in present]):
            yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


def refused_global(exc: BaseException) -> str | None:
    """The global torch's safe unpickler refused, from its message (None if it names none)."""
    match = _GLOBAL.search(str(exc))
    return match.group(1) if match else None


def refusal(path: Path, exc: BaseException, hint: str = "") -> ConfigurationError:
    """The error for a file torch's safe unpickler refused: damaged (a record fails its CRC)
    or unsafe (it names a global, or does something else only a full unpickler would)."""
    if refused_global(exc) is None and zipfile.is_zipfile(path) and damaged_record(path):
        return damage_error(path, exc)
    return unsafe_error(path, exc, hint)


def unsafe_error(path: Path | str, exc: BaseException, hint: str = ""
                 ) -> UnsafeCheckpointError:
    name = refused_global(exc)
    lines = [line for line in str(exc).splitlines() if "Unpickler error" in line]
    what = (f"unsafe global {name!r}" if name else
            (lines or str(exc).strip().splitlines() or ["refused"])[0].strip())
    return UnsafeCheckpointError(
        f"checkpoint file {str(path)!r} is not a trusted checkpoint: it holds Python objects "
        f"that safe loading refuses ({what}; loading it could run code), so fulmen did not "
        f"load it.{hint}")


def check_readable(path: Path) -> None:
    """A clear error for a missing file, a folder, or a file torch did not write."""
    if not path.exists():
        raise ConfigurationError(f"checkpoint {str(path)!r} does not exist")
    if path.is_dir():
        raise ConfigurationError(f"checkpoint {str(path)!r} is a directory; a file was "
                                 "expected here")
    with open(path, "rb") as handle:
        head = handle.read(4)
    if not head:
        raise CorruptCheckpointError(f"checkpoint file {str(path)!r} is empty (0 bytes): the "
                                     "save that wrote it was interrupted")
    if ZIP_MAGIC.startswith(head[:4]) and not zipfile.is_zipfile(path):
        raise damage_error(path, None)
    if head == ZIP_MAGIC and damaged_record(path, small_only=True):
        raise damage_error(path, None)
    if head != ZIP_MAGIC and head[:1] != PICKLE_MAGIC:
        raise ConfigurationError(f"checkpoint file {str(path)!r} is not a torch checkpoint "
                                 "(it was not written by torch.save)")


def damage_error(path: Path, exc: BaseException | None) -> CorruptCheckpointError:
    """Says whether ``path`` is truncated (a zip without its end) or which record is damaged."""
    size = path.stat().st_size if path.exists() else 0
    text = (str(exc).strip().splitlines() or [""])[0] if exc else ""
    cause = f" ({type(exc).__name__}: {text})" if exc else ""
    if not zipfile.is_zipfile(path):
        return CorruptCheckpointError(
            f"checkpoint file {str(path)!r} is truncated or corrupt: it ends ({size} bytes) "
            f"before the index torch.save writes last, so the save that wrote it did not "
            f"finish or the copy was cut short{cause}")
    bad = damaged_record(path)
    where = f": record {bad!r} fails its CRC check" if bad else cause
    return CorruptCheckpointError(
        f"checkpoint file {str(path)!r} is corrupt{where}; restore it from a good copy")


def damaged_record(path: Path, small_only: bool = False) -> str | None:
    """The first zip record of ``path`` whose bytes do not match their CRC, if any; with
    ``small_only``, only the records that are not tensor data (the pickle: cheap to check,
    and torch itself never checks it)."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if small_only and "/data/" in info.filename:
                    continue
                try:
                    with archive.open(info) as handle:
                        while handle.read(1 << 24):
                            pass
                except (zipfile.BadZipFile, OSError, EOFError):
                    return info.filename
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return f"<{type(exc).__name__}: {exc}>"
    return None

