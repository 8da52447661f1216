"""``fulmen checkpoint convert SRC DST --to file|dcp|safetensors``: consolidate or reshard on
the CPU, one tensor at a time.

Sources: a canonical checkpoint (file or DCP directory), a DCP directory, a directory in a
layout a plugin registers (:mod:`fulmen.checkpoint.layouts`), a plain ``torch.save`` file or a
Lightning 2.x checkpoint. Nothing in them runs.

The aim is a peak memory near the largest tensor (measured by
``tests/benchmarks/checkpoint.py``; not reached yet): a DCP source is read item by item; a
file source is memory-mapped; a file target is laid out first with ``torch.serialization.skip_data``
(every tensor's bytes reserved, none allocated) and each tensor is then written into its
place; a DCP target pulls each tensor from the source when DCP writes it; safetensors is
written as its header and then tensor after tensor. ``DST`` must not exist: nothing is
overwritten.
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fulmen.checkpoint import canonical, manifest
from fulmen.errors import ConfigurationError

TARGETS = ("file", "dcp", "safetensors")
#: torch dtype name -> safetensors dtype code.
_SAFETENSORS = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
                "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
                "bool": "BOOL", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}


class Lazy:
    """A tensor of the source, read when asked (shape and dtype known up front)."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, read: Callable[[], Any]) -> None:
        self.shape, self.dtype, self.read = shape, dtype, read

    def placeholder(self) -> Any:
        """An uninitialised tensor of this shape: address space only, no memory touched."""
        import torch

        return torch.empty(self.shape, dtype=self.dtype)


class Source:
    """The checkpoint to convert: ``tree`` is its nested content with :class:`Lazy` in place
    of every tensor; ``lazies`` lists ``(path, lazy)`` in order."""

    def __init__(self, path: Path) -> None:
        from fulmen.checkpoint import reading

        self.path = path
        self.kind = reading.kind_of(path)
        self.tree: dict[str, Any] = {}
        if self.kind == "dcp":
            self._from_dcp()
        elif self.kind == "file":
            self._from_file()
        else:  # a plugin's layout (fulmen.checkpoint.layouts): its weights, read at once
            found = reading.read(path)
            content = dict(found["content"]) if isinstance(found["content"], dict) else {}
            content["state_dict"] = {k.removeprefix("state_dict."): v
                                     for k, v in found["tensors"].items()
                                     if k.startswith("state_dict.")}
            self.tree = self._lazify(content)

    def _from_dcp(self) -> None:
        meta_file = self.path / canonical.META
        if meta_file.is_file():
            canonical.check_directory(self.path, share=(0, 1))  # checksums too: never copy
            meta = canonical.read_meta(self.path)                # a damaged shard onwards
        else:
            meta = {}
        lists = set(meta.pop("fulmen_dcp_lists", ["optimizer_states"]))
        meta.pop("fulmen_dcp_keys", None)
        entries = canonical.rank_rngs(self.path)  # every rank's random states, one list
        if entries and "rng_states" in meta:
            from fulmen.checkpoint import rng

            meta[rng.KEY] = entries
        tree: dict[str, Any] = self._lazify(meta)  # every tensor lazy: one record each
        for flat, path, entry in canonical.items(self.path):
            size = getattr(entry, "size", None)
            if size is None:
                value = canonical.read_item(self.path, flat, entry)
            else:
                def read(flat: str = flat, entry: Any = entry) -> Any:
                    return canonical.read_item(self.path, flat, entry)

                value = Lazy(tuple(size), entry.properties.dtype, read)
            canonical.place(tree, path, value)
        for key in lists & set(tree):
            if isinstance(tree[key], dict):
                tree[key] = [tree[key][k] for k in sorted(tree[key], key=int)]
        self.tree = tree

    def _from_file(self) -> None:
        from fulmen.checkpoint import safety

        content = safety.load_file(self.path, mmap=zipfile.is_zipfile(self.path))
        import torch

        if isinstance(content, dict) and content and all(
                isinstance(v, torch.Tensor) for v in content.values()):
            content = {"state_dict": content}  # a bare state dict (torch.save(model.state_dict()))
        if not isinstance(content, dict):
            raise ConfigurationError(f"{str(self.path)!r} holds a {type(content).__name__}; "
                                     "convert reads checkpoints that are dictionaries")
        manifest.check_version(content.get(manifest.KEY), str(self.path))
        self.tree = self._lazify(content)

    @staticmethod
    def _lazify(value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor):
            tensor = value
            return Lazy(tuple(tensor.shape), tensor.dtype, lambda: tensor)
        if isinstance(value, dict):
            return {k: Source._lazify(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            items = [Source._lazify(v) for v in value]
            return items if isinstance(value, list) else tuple(items)
        return value


def walk(value: Any, kind: type = Lazy, path: tuple[Any, ...] = ()
         ) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """``(path, leaf)`` for every instance of ``kind`` in nested dicts, lists and tuples, in
    the order the pickler meets them."""
    if isinstance(value, kind):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, kind, (*path, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from walk(item, kind, (*path, index))


def rebuild(value: Any, leaf: Callable[[Lazy], Any]) -> Any:
    if isinstance(value, Lazy):
        return leaf(value)
    if isinstance(value, dict):
        return {k: rebuild(v, leaf) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [rebuild(v, leaf) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def convert(src: str | os.PathLike[str], dst: str | os.PathLike[str], to: str) -> Path:
    """Write the checkpoint at ``src`` to ``dst`` in the ``to`` layout; returns ``dst``."""
    if to not in TARGETS:
        raise ConfigurationError(f"--to {to!r} is not a checkpoint layout; use one of "
                                 f"{', '.join(TARGETS)}")
    source_path, target = Path(src), Path(dst)
    if target.exists():
        raise ConfigurationError(f"{str(target)!r} exists already; convert never overwrites. "
                                 "Choose another destination or remove it first")
    if source_path.resolve() == target.resolve():
        raise ConfigurationError("convert needs a destination other than its source")
    source = Source(source_path)  # validated before anything is written
    writer = {"file": write_file, "dcp": write_dcp, "safetensors": write_safetensors}[to]
    writer(source.tree, target)
    return target


# ====================================================================== file


def write_file(tree: dict[str, Any], target: Path) -> None:
    """A ``torch.save`` file, written tensor by tensor into space reserved for each."""
    import torch

    from fulmen.checkpoint.atomic import atomic_target

    lazies = [lazy for _, lazy in walk(tree)]
    skeleton = rebuild(tree, Lazy.placeholder)
    placeholders = [t for _, t in walk(skeleton, torch.Tensor)]
    with atomic_target(target) as tmp:
        with torch.serialization.skip_data():
            torch.save(skeleton, tmp)
        del skeleton
        order = _storage_order(placeholders)  # record name for each tensor, by position
        with zipfile.ZipFile(tmp) as archive:
            records = {info.filename.split("/", 1)[1]: info for info in archive.infolist()}
            start_dir = archive.start_dir
        crcs: dict[str, int] = {}
        with open(tmp, "r+b") as handle:
            for lazy, name in zip(lazies, order):
                info = records[name]
                tensor = lazy.read().detach().cpu().contiguous()
                data = tensor.reshape(-1).view(torch.uint8).numpy() if tensor.numel() else b""
                handle.seek(_data_offset(handle, info))
                handle.write(data)
                crcs[info.filename] = zlib.crc32(data)
                del tensor, data
                give_back_memory()
            _patch_crcs(handle, records, crcs, start_dir)
        from fulmen.checkpoint import filesum

        filesum.stamp(tmp)  # the file's CRC-32C, as every checkpoint file fulmen writes


def _storage_order(tensors: list[Any]) -> list[str]:
    """torch.save numbers storages in the order the pickler meets them: depth first, the
    same order :func:`walk` yields. Every tensor of the skeleton is a placeholder with its
    own storage (the source's tensors, meta entries included, are all :class:`Lazy`)."""
    return [f"data/{i}" for i in range(len(tensors))]


def _data_offset(handle: Any, info: zipfile.ZipInfo) -> int:
    handle.seek(info.header_offset)
    header = handle.read(30)
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_length + extra_length


def _patch_crcs(handle: Any, records: dict[str, zipfile.ZipInfo], crcs: dict[str, int],
                start_dir: int) -> None:
    """Write each record's CRC-32 into its local header and its central directory entry
    (which starts at ``start_dir``)."""
    for info in records.values():
        if info.filename in crcs:
            handle.seek(info.header_offset + 14)
            handle.write(struct.pack("<I", crcs[info.filename]))
    position = start_dir
    for _ in records:
        handle.seek(position)
        header = handle.read(46)
        if header[:4] != b"PK\x01\x02":
            raise ConfigurationError("convert: unexpected zip layout written by torch.save")
        name_length, extra_length, comment_length = struct.unpack("<HHH", header[28:34])
        name = handle.read(name_length).decode("utf-8", "replace")
        if name in crcs:
            handle.seek(position + 16)
            handle.write(struct.pack("<I", crcs[name]))
        position += 46 + name_length + extra_length + comment_length


# ====================================================================== dcp


def write_dcp(tree: dict[str, Any], target: Path) -> None:
    """A canonical DCP directory; DCP pulls each tensor from the source as it writes it."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.default_planner import DefaultSavePlanner

    from fulmen.checkpoint.atomic import atomic_target

    content = dict(tree)
    if "state_dict" not in content:
        raise ConfigurationError("convert --to dcp needs a checkpoint with a 'state_dict'")
    shards, meta = canonical.split(content)
    sources: dict[int, Lazy] = {}

    def leaf(lazy: Lazy) -> Any:
        tensor = lazy.placeholder()
        sources[id(tensor)] = lazy
        return tensor

    state = rebuild(shards, leaf)

    class _Pull(DefaultSavePlanner):
        def resolve_data(self, write_item: Any) -> Any:
            value = super().resolve_data(write_item)
            lazy = sources.get(id(value))
            give_back_memory()  # the tensors DCP wrote before this one
            return lazy.read().detach().cpu().contiguous() if lazy is not None else value

    with atomic_target(target) as tmp:
        tmp.mkdir()
        dcp.save(state, storage_writer=dcp.FileSystemWriter(str(tmp), thread_count=1),
                 planner=_Pull(), no_dist=True)
        torch.save(rebuild(meta, lambda lazy: lazy.read()), tmp / canonical.META)
        facts = dict(meta.get(manifest.KEY) or {})
        facts.update({"layout": "dcp", "world_size": 1, "converted_from": "file"})
        facts.setdefault("format", manifest.FORMAT)
        manifest.write_directory_manifest(tmp, facts)


# ====================================================================== safetensors


def write_safetensors(tree: dict[str, Any], target: Path) -> None:
    """The model weights (``state_dict``; every tensor when there is none) as safetensors,
    written header first, then tensor after tensor. The checkpoint's origin goes to the
    header's ``__metadata__``."""
    import torch

    from fulmen.checkpoint.atomic import atomic_target

    weights = tree.get("state_dict", tree)
    entries = [(".".join(str(p) for p in path), lazy) for path, lazy in walk(weights)]
    header: dict[str, Any] = {}
    offset = 0
    for name, lazy in entries:
        code = _SAFETENSORS.get(str(lazy.dtype).removeprefix("torch."))
        if code is None:
            raise ConfigurationError(f"tensor {name!r} has dtype {lazy.dtype}, which "
                                     "safetensors cannot hold")
        size = int(torch.Size(lazy.shape).numel()) * lazy.dtype.itemsize
        header[name] = {"dtype": code, "shape": list(lazy.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    origin = tree.get(manifest.KEY)
    header["__metadata__"] = {"format": "pt", **({manifest.KEY: json.dumps(origin, default=str)}
                                                 if origin else {})}
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with atomic_target(target) as tmp, open(tmp, "wb") as handle:
        handle.write(struct.pack("<Q", len(blob)))
        handle.write(blob)
        for _, lazy in entries:
            tensor = lazy.read().detach().cpu().contiguous()
            if tensor.numel():
                handle.write(tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
                             if tensor.dtype == torch.bool else
                             tensor.reshape(-1).view(torch.uint8).numpy())
            del tensor
            give_back_memory()


_TRIM: list[Any] = []


def give_back_memory() -> None:
    """Return freed heap memory to the system (glibc's ``malloc_trim``; nothing elsewhere).
    After a large buffer is freed, glibc serves later buffers of that size from its heap and
    keeps them resident when freed, so converting tensor after tensor would hold about the whole
    model; trimming after each tensor keeps the peak near the largest one."""
    if not _TRIM:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
        _TRIM.append(trim)
    if _TRIM[0] is not None:
        _TRIM[0](0)
