"""Read W&B run files (``run-<id>.wandb``) back: the records wandb wrote, decoded with wandb's
own protobuf schema (``wandb.proto.wandb_internal_pb2.Record``); a file still being written
yields the records complete so far. Recent wandb has no Python reader of its own (its
``datastore`` module moved into the Go core), so the framing, W&B's LevelDB-style log (a 7-byte
file header, 32 KiB blocks of CRC-32-checked records), is read here. ``WandbLogger.read_run``
(the conformance kit) and the tests use it."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK, HEADER = 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> Iterator[Any]:
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    if len(data) < HEADER:
        return  # being created
    ident, magic, version = struct.unpack("<4sHB", data[:HEADER])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), (ident, magic, version)
    pos, parts = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # the block's tail is padding
            pos += left
            continue
        checksum, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        if length == 0 and kind == 0:
            pos += left  # zero padding up to the next block
            continue
        chunk = data[pos + HEADER:pos + HEADER + length]
        if len(chunk) < length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != checksum:
            return  # the tail is still being written
        pos += HEADER + length
        parts = chunk if kind in (FULL, FIRST) else parts + chunk
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]
            record.ParseFromString(parts)
            yield record


def read_run(folder: Path) -> dict[str, dict[str, Any]]:
    """Every ``run-<id>.wandb`` under ``folder``, grouped by run id: history rows, config,
    artifacts and exit codes, as W&B recorded them (a continued run has several files), and
    ``complete``: whether every file of the run ends with its exit record (wandb's core process
    may still be writing a file after ``finish()`` returned)."""
    runs: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.rglob("run-*.wandb"), key=lambda p: p.stat().st_mtime):
        run_id = path.stem[len("run-"):]
        run = runs.setdefault(run_id, {"history": [], "config": {}, "artifacts": [],
                                       "files": [], "exit_codes": [], "complete": True})
        run["files"].append(path)
        exited = False
        for record in records(path):
            kind = record.WhichOneof("record_type")
            if kind == "history":
                run["history"].append({(item.key or "/".join(item.nested_key)):
                                       json.loads(item.value_json) for item in record.history.item})
            elif kind == "config":
                for item in record.config.update:
                    key = item.key or "/".join(item.nested_key)
                    run["config"][key] = json.loads(item.value_json)
            elif kind == "artifact":
                run["artifacts"].append(record.artifact)
            elif kind == "exit":
                run["exit_codes"].append(record.exit.exit_code)
                exited = True
        run["complete"] = run["complete"] and exited
    return runs
