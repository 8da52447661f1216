"""``fulmen checkpoint inspect|convert|verify|diff``: look into checkpoints without running them.

Exit status: 0 fine (``diff``: identical), 1 problems found (``diff``: they differ), 2 the
checkpoint could not be read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from datetime import UTC
from typing import Any

from fulmen import storage
from fulmen.errors import FulmenError

PROGRESS_KEYS = ("epoch", "global_step", "loops")


def describe(path: str) -> dict[str, Any]:
    """What ``inspect --json`` prints: kind, origin, progress, hyperparameters, tensors."""
    import torch

    from fulmen.checkpoint import manifest, reading

    found = reading.read(path)
    content = found["content"] if isinstance(found["content"], dict) else {}
    tensors = {}
    for key, value in found["tensors"].items():
        if isinstance(value, torch.Tensor):
            shape, dtype, count = list(value.shape), value.dtype, value.numel()
        else:
            shape, dtype = list(value[0]), value[1]
            count = int(torch.Size(shape).numel())
        size = count * (dtype.itemsize if isinstance(dtype, torch.dtype) else 0)
        tensors[key] = {"shape": shape, "dtype": str(dtype).removeprefix("torch."),
                        "bytes": size}
    origin = dict(content.get(manifest.KEY) or {})
    for key in ("fulmen_version", "pytorch-lightning_version", "lightning_version"):
        if key in content:
            origin.setdefault("written_by", f"{key.removesuffix('_version')} {content[key]}")
    checksum: dict[str, Any] | None = None
    if found["kind"] == "file" and not storage.is_url(path):
        from pathlib import Path

        from fulmen.checkpoint import filesum

        checksum = filesum.describe(Path(storage.local(path)))
    return {
        "path": str(path), "kind": found["kind"], "origin": origin, "checksum": checksum,
        "progress": {k: compact(content[k]) for k in PROGRESS_KEYS if k in content},
        "hyperparameters": content.get("hyper_parameters") or {},
        "fault_tolerance": content.get("fault_tolerance") or {},
        "tensors": tensors,
        "total_bytes": sum(t["bytes"] for t in tensors.values()),
        "files": found["files"],
    }


def compact(value: Any) -> Any:
    """``value`` for people: tensors and long sequences summarised, random states left out."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"<tensor {list(value.shape)} {str(value.dtype).removeprefix('torch.')}>"
    if isinstance(value, dict):
        return {str(k): compact(v) for k, v in value.items() if "rng" not in str(k)}
    if isinstance(value, list | tuple):
        return [compact(v) for v in value] if len(value) <= 8 else f"<{len(value)} items>"
    return value if isinstance(value, int | float | str | bool | type(None)) else repr(value)


def _print_inspect(report: dict[str, Any]) -> None:
    print(f"{report['path']} ({report['kind']} checkpoint)")
    origin = report["origin"]
    print("origin: " + (", ".join(f"{k}={v}" for k, v in sorted(origin.items()))
                        if origin else "not recorded"))
    for key, value in report["progress"].items():
        print(f"progress: {key} = {json.dumps(value, default=str)}")
    if report.get("checksum") is not None:
        crc = report["checksum"]["crc32c"]
        print(f"checksum: CRC-32C {crc} (stored in the file, compared on every load)" if crc
              else f"checksum: none ({report['checksum']['note']})")
    hparams = report["hyperparameters"]
    print("hyperparameters: " + (json.dumps(hparams, default=str, sort_keys=True)
                                 if hparams else "none"))
    _print_fault_tolerance(report.get("fault_tolerance") or {})
    tensors = report["tensors"]
    print(f"tensors: {len(tensors)}, {_human(report['total_bytes'])}")
    width = max([len(k) for k in tensors] + [4])
    for key, info in tensors.items():
        print(f"  {key:<{width}}  {info['shape']!s:<16} {info['dtype']:<9} "
              f"{_human(info['bytes'])}")
    if report["files"]:
        print(f"files: {len(report['files'])}")
        for name, size in report["files"].items():
            print(f"  {name}  {_human(size)}")


def _checksum_note(path: str) -> str:
    """For a single file: which checksum ``verify`` compared."""
    from pathlib import Path

    from fulmen.checkpoint import filesum

    file = Path(storage.local(path)) if not storage.is_url(path) else None
    if file is None or not file.is_file():
        return ""
    crc = filesum.stored_in(file)
    return (f" (CRC-32C {crc} matches)" if crc else
            " (this file carries no checksum: only the CRC-32 of each zip record was checked)")


def _print_fault_tolerance(entry: dict[str, Any]) -> None:
    """When and why the checkpoint was saved, the notice that caused it, and the lost work of
    every resume that led to it."""
    from datetime import datetime

    from fulmen.fault_tolerance.lost_work import Resume, describe_preemption

    if not entry:
        return
    saved = entry.get("saved_at")
    when = datetime.fromtimestamp(saved, UTC).isoformat(timespec="seconds") \
        if isinstance(saved, int | float) else "?"
    print(f"saved: {when} at step {entry.get('global_step')} ({entry.get('reason', '?')})")
    if isinstance(entry.get("notice"), dict):
        print("notice: " + describe_preemption(entry["notice"]))
    resumes = [r for r in entry.get("resumes", []) if isinstance(r, dict)]
    print(f"lost work: {len(resumes)} resume(s)" + (
        ", " + f"{sum(r.get('steps_redone') or 0 for r in resumes)} step(s) and "
        f"{sum(r.get('seconds_redone') or 0.0 for r in resumes):.1f} s redone in all"
        if resumes else ""))
    fields = set(Resume.__dataclass_fields__)
    for record in resumes:
        print("  " + Resume(**{k: v for k, v in record.items() if k in fields}).describe())


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def diff(a: str, b: str) -> dict[str, Any]:
    """Added, removed and changed tensors from ``a`` to ``b``, with the max abs difference."""
    import torch


    left, right = _tensors(a), _tensors(b)
    changed: dict[str, dict[str, Any]] = {}
    for key in sorted(set(left) & set(right)):
        x, y = left[key], right[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            changed[key] = {"a": f"{list(x.shape)} {x.dtype}", "b": f"{list(y.shape)} {y.dtype}"}
        elif not torch.equal(x, y):
            delta = (x.double() - y.double()).abs().max() if x.numel() else torch.tensor(0.0)
            changed[key] = {"max_abs_diff": float(delta)}
    return {"added": sorted(set(right) - set(left)), "removed": sorted(set(left) - set(right)),
            "changed": changed, "same": len(set(left) & set(right)) - len(changed)}


def against_model(path: str, target: str) -> list[str]:
    """Keys and shapes of the checkpoint's weights that do not match the model class
    ``target`` (``pkg.module.Class`` or ``pkg.module:Class``)."""
    import importlib

    from fulmen.checkpoint import fit

    module_name, _, name = target.replace(":", ".").rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise FulmenError(f"--model {target!r}: cannot import it ({exc}); give the class as "
                          "package.module.Class, importable from here") from exc
    report = describe(path)
    if report.get("checksum") is not None:
        crc = report["checksum"]["crc32c"]
        print(f"checksum: CRC-32C {crc} (stored in the file, compared on every load)" if crc
              else f"checksum: none ({report['checksum']['note']})")
    hparams = report["hyperparameters"]
    try:
        model = cls(**hparams) if hparams else cls()
    except TypeError as exc:
        raise FulmenError(f"--model {target!r}: cannot build it from the checkpoint's "
                          f"hyperparameters {sorted(hparams)} ({exc})") from exc
    shapes = {k.removeprefix("state_dict."): tuple(v["shape"])
              for k, v in report["tensors"].items()
              if k.startswith("state_dict.") or "state_dict" not in
              {t.split(".", 1)[0] for t in report["tensors"]}}
    given = {k: _Shaped(v) for k, v in shapes.items()}
    missing, unexpected, changed = fit.misfits(model.state_dict(), given)
    problems = [f"missing key {k!r} (the model has it, the checkpoint does not)"
                for k in missing]
    problems += [f"unexpected key {k!r} (in the checkpoint, not in {name})" for k in unexpected]
    problems += [f"{k}: checkpoint {list(a or ())}, model {list(b or ())}"
                 for k, a, b in changed]
    return problems


class _Shaped:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


def _tensors(path: str) -> dict[str, Any]:
    """Every tensor of a checkpoint by dotted name; a DCP directory's read whole (every rank's
    random states included, as a file converted from it holds them)."""
    from pathlib import Path

    from fulmen.checkpoint import canonical, reading

    if reading.kind_of(Path(path)) == "dcp":
        return reading.flatten(canonical.read_directory(Path(path)))
    return dict(reading.read(path)["tensors"])


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="fulmen checkpoint",
                                     description="Inspect, convert, verify and compare "
                                                 "checkpoints (nothing in them is executed).")
    sub = parser.add_subparsers(dest="action", required=True)
    inspect = sub.add_parser("inspect", help="tensors, progress, origin, hyperparameters")
    inspect.add_argument("path")
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    convert = sub.add_parser("convert", help="consolidate or reshard into another layout "
                                             "(CPU, one tensor at a time)")
    convert.add_argument("src")
    convert.add_argument("dst", help="must not exist: nothing is overwritten")
    convert.add_argument("--to", required=True, choices=("file", "dcp", "safetensors"),
                         help="file: one torch.save file; dcp: a torch.distributed.checkpoint "
                              "directory; safetensors: the model weights")
    verify = sub.add_parser("verify", help="check checksums and completeness")
    verify.add_argument("path")
    verify.add_argument("--model", default=None, metavar="pkg.module.Class",
                        help="also compare keys and shapes with this model class (built "
                             "with no arguments, or from the checkpoint's hyperparameters)")
    compare = sub.add_parser("diff", help="tensors added, removed and changed from A to B")
    compare.add_argument("a")
    compare.add_argument("b")
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(list(argv))
    try:
        with contextlib.ExitStack() as stack:  # URLs (s3://...) are read from a local copy
            for name in ("path", "a", "b"):
                given = vars(args).get(name)
                if given is not None:
                    vars(args)[name] = stack.enter_context(storage.local_copy(given))
            return _run(args)
    except FulmenError as exc:
        print(f"fulmen checkpoint: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.action == "inspect":
        report = describe(args.path)
        if args.json:
            print(json.dumps(report, indent=1, default=str))
        else:
            _print_inspect(report)
        return 0
    if args.action == "convert":
        from fulmen.checkpoint.convert import convert

        written = convert(args.src, args.dst, args.to)
        print(f"wrote {written} ({args.to})")
        return 0
    if args.action == "verify":
        from fulmen.checkpoint.manifest import verify

        problems = verify(args.path)
        if args.model and not problems:
            problems = against_model(args.path, args.model)
        for problem in problems:
            print(f"FAIL {problem}")
        if not problems:
            print(f"OK {args.path}{_checksum_note(args.path)}")
        return 1 if problems else 0
    result = diff(args.a, args.b)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for key in result["added"]:
            print(f"+ {key}")
        for key in result["removed"]:
            print(f"- {key}")
        for key, info in result["changed"].items():
            detail = (f"max abs diff {info['max_abs_diff']:.6g}" if "max_abs_diff" in info
                      else f"{info['a']} -> {info['b']}")
            print(f"~ {key}: {detail}")
        print(f"{len(result['added'])} added, {len(result['removed'])} removed, "
              f"{len(result['changed'])} changed, {result['same']} equal")
    return 1 if result["added"] or result["removed"] or result["changed"] else 0
