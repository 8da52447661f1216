"""Reading any fulmen checkpoint's contents without running code: a single torch file, a
``torch.distributed.checkpoint`` (DCP) directory, or a directory in a layout a plugin registers
(:mod:`fulmen.checkpoint.layouts`)."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

from fulmen.checkpoint import safety
from fulmen.errors import ConfigurationError

DCP_METADATA = ".metadata"
_DCP_MODULE = "torch.distributed.checkpoint"
_PATHS = {"PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath", "Path"}
_BUILTINS = {"set", "frozenset", "slice", "complex", "bytearray"}


class _DCPUnpickler(pickle.Unpickler):
    """DCP's ``.metadata`` pickle, restricted to DCP's metadata classes, torch dtypes,
    layouts and sizes, paths and plain containers: anything else is refused, never imported
    (torch's own ``dcp.load`` unpickles it unrestricted)."""

    def find_class(self, module: str, name: str) -> Any:
        import collections

        import torch

        value: Any = None
        if module == _DCP_MODULE or module.startswith(_DCP_MODULE + "."):
            value = getattr(__import__(module, fromlist=[name]), name, None)
            value = value if isinstance(value, type) else None
        elif (module == "torch" and name in ("Size", "device")) or \
                (module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)):
            value = getattr(torch, name)
        elif module == "torch.serialization" and name == "_get_layout":  # torch.strided & co
            value = torch.serialization._get_layout
        elif module == "pathlib" and name in _PATHS:  # DCP records the checkpoint_id
            value = getattr(__import__("pathlib"), name)
        elif module == "collections" and name == "OrderedDict":
            value = collections.OrderedDict
        elif module == "builtins" and name in _BUILTINS:
            value = __import__("builtins").__dict__[name]
        elif module == "_codecs" and name == "encode":
            import codecs

            value = codecs.encode
        if value is None:
            raise pickle.UnpicklingError(f"Unsupported global: GLOBAL {module}.{name}")
        return value


def read_dcp_metadata(root: Path) -> Any:
    """The ``Metadata`` of a DCP directory, unpickled with :class:`_DCPUnpickler`."""
    path = root / DCP_METADATA
    try:
        return _DCPUnpickler(io.BytesIO(path.read_bytes())).load()
    except pickle.UnpicklingError as exc:
        raise safety.unsafe_error(path, exc) from exc
    except (EOFError, ValueError, AttributeError, TypeError) as exc:
        raise safety.CorruptCheckpointError(f"checkpoint file {str(path)!r} is truncated or "
                                            f"corrupt ({type(exc).__name__}: {exc})") from exc


def kind_of(path: Path) -> str:
    """``"file"``, ``"dcp"``, or the name of the registered layout the directory is in."""
    if path.is_file():
        return "file"
    if not path.is_dir():
        raise ConfigurationError(f"checkpoint {str(path)!r} does not exist")
    if (path / DCP_METADATA).is_file():
        return "dcp"
    from fulmen.checkpoint.layouts import layout_of, registered

    layout = layout_of(path)
    if layout is not None:
        return layout.name
    known = "".join(f"; {lay.name}: {lay.description}" for lay in registered())
    raise ConfigurationError(f"{str(path)!r} is a directory but no checkpoint fulmen knows: "
                             f"not DCP ({DCP_METADATA} inside){known}")


def _load(path: Path) -> Any:
    return safety.load_file(path, mmap=zipfile.is_zipfile(path))


def read(path: str | Path) -> dict[str, Any]:
    """``{"kind", "content", "tensors", "files"}``: ``content`` is the checkpoint dict (meta
    for directories), ``tensors`` maps dotted names to tensors (or DCP ``(shape, dtype)``
    entries), ``files`` lists a directory's files and sizes."""
    path = Path(path)
    kind = kind_of(path)
    if kind == "file":
        content = _load(path)
        return {"kind": kind, "content": content, "tensors": flatten(content), "files": {}}
    files = {p.relative_to(path).as_posix(): p.stat().st_size
             for p in sorted(path.rglob("*")) if p.is_file()}
    if kind == "dcp":
        meta = path / "meta.pt"
        content = _load(meta) if meta.is_file() else {}
        metadata = read_dcp_metadata(path)
        tensors: dict[str, Any] = {}
        for key, entry in getattr(metadata, "state_dict_metadata", {}).items():
            size = getattr(entry, "size", None)
            dtype = getattr(getattr(entry, "properties", None), "dtype", None)
            if size is not None:
                tensors[key] = (tuple(size), dtype)
        return {"kind": kind, "content": content, "tensors": tensors, "files": files}
    from fulmen.checkpoint.layouts import layout_of

    layout = layout_of(path)
    assert layout is not None  # kind_of found it
    found = layout.read(path)
    return {"kind": kind, "content": found["content"], "tensors": found["tensors"],
            "files": files}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Every tensor in nested dicts/lists, by dotted name."""
    import torch

    out: dict[str, Any] = {}
    if isinstance(value, torch.Tensor):
        out[prefix or "<root>"] = value
    elif isinstance(value, dict):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{index}" if prefix else str(index)))
    return out


def safe_dcp_load(state: dict[str, Any], path: str | Path, weights_only: bool = True,
                  planner: Any = None, no_dist: bool = False) -> None:
    """``dcp.load(state, checkpoint_id=path)`` that runs no code from the directory: its
    ``.metadata`` goes through :class:`_DCPUnpickler`, its non-tensor items through torch's
    safe unpickler (DCP would call ``torch.load(weights_only=False)`` on them). With
    ``weights_only=False`` (the caller trusts the files) DCP reads them as it likes.
    ``planner``: DCP's load planner (default: its own); ``no_dist``: this process reads alone
    (no collective even when a process group exists)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.metadata import StorageMeta

    root = Path(path)

    class _SafeReader(FileSystemReader):
        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
            metadata = read_dcp_metadata(root)
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    from torch.distributed.checkpoint.api import CheckpointException

    if not weights_only:
        dcp.load(state, checkpoint_id=str(root), planner=planner, no_dist=no_dist)
        return
    read_dcp_metadata(root)  # refused here, with its own error, before DCP wraps it
    try:
        with safety.weights_only_everywhere():
            dcp.load(state, storage_reader=_SafeReader(str(root)), planner=planner,
                     no_dist=no_dist)
    except pickle.UnpicklingError as exc:
        raise safety.unsafe_error(root, exc) from exc
    except CheckpointException as exc:  # DCP wraps what a rank raised
        if safety.refused_global(exc) or "Weights only load failed" in str(exc):
            raise safety.unsafe_error(root, exc) from exc
        raise
