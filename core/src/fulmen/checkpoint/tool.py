"""``fulmen checkpoint inspect|verify|diff``: look into checkpoints without running them.

Exit status: 0 fine (``diff``: identical), 1 problems found (``diff``: they differ), 2 the
checkpoint could not be read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
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
    return {
        "path": str(path), "kind": found["kind"], "origin": origin,
        "progress": {k: compact(content[k]) for k in PROGRESS_KEYS if k in content},
        "hyperparameters": content.get("hyper_parameters") or {},
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
    hparams = report["hyperparameters"]
    print("hyperparameters: " + (json.dumps(hparams, default=str, sort_keys=True)
                                 if hparams else "none"))
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

    from fulmen.checkpoint import reading

    left, right = reading.read(a)["tensors"], reading.read(b)["tensors"]
    for name, side in ((a, left), (b, right)):
        if any(not isinstance(v, torch.Tensor) for v in side.values()):
            raise FulmenError(f"{name!r} is a DCP directory: diff compares single files and "
                              "DeepSpeed directories")
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


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="fulmen checkpoint",
                                     description="Inspect, verify and compare checkpoints "
                                                 "(nothing in them is executed).")
    sub = parser.add_subparsers(dest="action", required=True)
    inspect = sub.add_parser("inspect", help="tensors, progress, origin, hyperparameters")
    inspect.add_argument("path")
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    verify = sub.add_parser("verify", help="check checksums and completeness")
    verify.add_argument("path")
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
    if args.action == "verify":
        from fulmen.checkpoint.manifest import verify

        problems = verify(args.path)
        for problem in problems:
            print(f"FAIL {problem}")
        if not problems:
            print(f"OK {args.path}")
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
