"""The ``fulmen`` command (also ``python -m fulmen``).

``fulmen plugins [--json] [--detect]`` lists every plugin with its distribution and status, every
registered name per kind, and with ``--detect`` what each detector answers here.
``fulmen plugins --check [NAME...]`` runs the conformance kit (:mod:`fulmen.testing`).

``fulmen fit|validate|test|predict --config FILE.yaml`` builds the model, data and trainer from a
LightningCLI-style config (``model:``/``data:`` with ``class_path`` + ``init_args``,
``trainer:`` with the Trainer's flags) and runs the stage; see :mod:`fulmen.run_cli`.

``fulmen checkpoint inspect|verify|diff``: see :mod:`fulmen.checkpoint.tool`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from fulmen.catalog import KINDS, PLURAL
from fulmen.errors import FulmenError
from fulmen.manager import PluginManager, get_plugin_manager

STAGES = ("fit", "validate", "test", "predict")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in STAGES:  # jsonargparse is imported only for these
        from fulmen.run_cli import run

        return run(args_list)
    if args_list and args_list[0] == "checkpoint":  # fulmen checkpoint inspect|verify|diff
        from fulmen.checkpoint.tool import main as checkpoint_main

        return checkpoint_main(args_list[1:])
    parser = argparse.ArgumentParser(prog="fulmen", description="fulmen: hardware-agnostic "
                                     "PyTorch training on plugins")
    sub = parser.add_subparsers(dest="command", required=True)
    for stage in STAGES:
        sub.add_parser(stage, help=f"{stage} from a config: fulmen {stage} --config FILE.yaml "
                       f"(fulmen {stage} --help lists every option)", add_help=False)
    sub.add_parser("checkpoint", help="inspect, verify or diff checkpoints: fulmen checkpoint "
                   "inspect|verify|diff --help", add_help=False)
    plugins = sub.add_parser("plugins", help="list plugins, registered names and detection")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    plugins.add_argument("--detect", action="store_true",
                         help="show what every detector answers on this machine")
    plugins.add_argument("--check", nargs="*", metavar="NAME",
                         help="run the conformance kit on these registered names or plugins "
                         "(every installed plugin when none is given)")
    plugins.add_argument("--timeout", type=float, default=120.0,
                         help="with --check: seconds each check process may run")
    plugins.add_argument("--exhaustive", action="store_true", help="with --check: run every "
                         "strategy name, not one per class and launcher")
    doctor = sub.add_parser("doctor", help="report versions, cluster variables, detection, "
                            "network and the main port, to paste into a bug report")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--version", action=_Versions, help="print the versions of fulmen, "
                        "torch and every distribution that provides fulmen plugins, and exit")
    if not args_list:  # a bare `fulmen` is a request for help, not a mistake
        parser.print_help()
        return 0
    args = parser.parse_args(args_list)
    try:
        if args.command == "doctor":
            return _doctor(args.json)
        if args.check is not None:
            from fulmen.testing.table import main as check

            return check(args.check, args.json, args.timeout, args.exhaustive)
        return _plugins(args.json, args.detect)
    except FulmenError as exc:
        print(f"fulmen: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `fulmen plugins | head`: the reader left; that is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


class _Versions(argparse.Action):
    """``fulmen --version``: read from package metadata only (no plugin is imported)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from importlib import metadata

        lines = []
        # `fulmen` is the distribution users install (it may be absent where only the kernel,
        # fulmen-core, was installed); fulmen-core and torch are always there.
        for name in ("fulmen", "fulmen-core", "torch"):
            try:
                lines.append(f"{name} {metadata.version(name)}")
            except metadata.PackageNotFoundError:
                if name != "fulmen":
                    lines.append(f"{name} (not installed)")
        plugin_dists = {(ep.dist.name, ep.dist.version) for ep in
                        metadata.entry_points(group="fulmen.plugins") if ep.dist is not None}
        lines += [f"{name} {version}" for name, version in sorted(plugin_dists)]
        print("\n".join(lines))
        parser.exit()


def _plugins(as_json: bool, detect: bool) -> int:
    manager = get_plugin_manager()
    errors: list[str] = []
    names: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    try:
        catalog = manager.catalog()
        for kind in KINDS:
            names[kind] = [{**e.record.facts(), "plugin": e.plugin.name,
                            "missing": list(e.record.missing())}
                           for e in catalog.entries(kind)]
    except FulmenError as exc:
        errors.append(str(exc))
    plugins = [{"name": i.name, "value": i.value, "distribution": i.distribution,
                "version": i.version, "status": i.status, "reason": i.reason,
                "provides": i.provides} for i in manager.plugins.values()]
    report: dict[str, Any] = {"plugins": plugins, "names": names, "errors": errors}
    if detect and not errors:
        report["detect"] = _detect(manager)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        _print(report)
    return 1 if errors else 0


def _doctor(as_json: bool) -> int:
    from fulmen.doctor import render, report

    data = report(_detect(get_plugin_manager()))
    print(json.dumps(data, indent=2, sort_keys=True, default=str) if as_json else render(data))
    return 0


def _detect(manager: PluginManager) -> dict[str, Any]:
    env = manager.verdicts("fulmen_detect_environment", environ=dict(os.environ))
    acc = manager.verdicts("fulmen_detect_accelerator")
    out: dict[str, Any] = {
        "environment": [{"plugin": p, "answer": a} for p, a in env],
        "accelerator": [{"plugin": p, "answer": a} for p, a in acc],
    }
    try:
        from fulmen.compose import compose

        selection = compose()
        out["auto"] = {"environment": selection.environment.name,
                       "accelerator": selection.accelerator.name,
                       "devices": list(selection.device_ids),
                       "strategy": selection.strategy.name,
                       "precision": selection.precision.name}
    except FulmenError as exc:
        out["auto_error"] = str(exc)
    return out


def _print(report: dict[str, Any]) -> None:
    for error in report["errors"]:
        print(f"error: {error}\n")
    rows = report["plugins"]
    print(f"Plugins (entry-point group 'fulmen.plugins'): {len(rows)}")
    width = max([len(r["name"]) for r in rows] + [4])
    needs: dict[str, set[str]] = {}
    for entries in report["names"].values():
        for e in entries:
            needs.setdefault(e["plugin"], set()).update(e["missing"])
    for r in rows:
        origin = f"{r['distribution']} {r['version']}" if r["distribution"] else "runtime"
        status = r["status"] + (f": {r['reason']}" if r["reason"] else "")
        if needs.get(r["name"]):
            status += f", but needs {', '.join(sorted(needs[r['name']]))} (not installed)"
        print(f"  {r['name']:<{width}}  {origin:<28} {status}")
    for kind in KINDS:
        entries = report["names"][kind]
        print(f"\n{PLURAL[kind].capitalize()}: {len(entries)}")
        nwidth = max([len(e["name"]) for e in entries] + [4])
        for e in entries:
            aka = e["aliases"] + [f"{a} (deprecated)" for a in e["deprecated_aliases"]]
            alias = f" [also: {', '.join(aka)}]" if aka else ""
            lacks = f"  [needs {', '.join(e['missing'])} (not installed)]" if e["missing"] else ""
            print(f"  {e['name']:<{nwidth}}  {e['description']}{alias}  ({e['plugin']}){lacks}")
    detect = report.get("detect")
    if detect:
        print("\nDetection on this machine, in the order the detectors are asked:")
        for kind in ("environment", "accelerator"):
            answers = detect[kind]
            chosen = next((a["plugin"] for a in answers if a["answer"] is not None), None)
            print(f"  {kind}:")
            for a in answers:
                mark = "  <- chosen (first answer)" if a["plugin"] == chosen else ""
                print(f"    {a['plugin']:<16} {a['answer']!r}{mark}")
        if "auto" in detect:
            auto = detect["auto"]
            print(f"  Trainer() with every argument 'auto' would use: environment="
                  f"{auto['environment']!r}, accelerator={auto['accelerator']!r}, devices="
                  f"{auto['devices']}, strategy={auto['strategy']!r}, precision="
                  f"{auto['precision']!r}")
        else:
            print(f"  Trainer() with every argument 'auto' fails: {detect['auto_error']}")


if __name__ == "__main__":
    raise SystemExit(main())
