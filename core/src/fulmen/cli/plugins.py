"""``fulmen plugins [--json] [--detect] [--check [NAME...]]``: every plugin with its distribution
and status (``BROKEN`` when a record's target module does not exist, found without importing
any plugin's code), every registered name per kind, what each detector answers here
(``--detect``), and the conformance kit (``--check``, :mod:`fulmen.testing`)."""

from __future__ import annotations

import json
import os
from typing import Any

from jsonargparse import ArgumentParser, Namespace

from fulmen.cli.commands import SUBCOMMANDS
from fulmen.errors import FulmenError
from fulmen.kernel.kinds import KINDS, PLURAL
from fulmen.kernel.manager import PluginManager, get_plugin_manager


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=SUBCOMMANDS["plugins"].help, exit_on_error=False,
                            allow_abbrev=False)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--detect", action="store_true",
                        help="show what every detector answers on this machine")
    parser.add_argument("--check", nargs="*", type=str, default=None, metavar="NAME",
                        help="run the conformance kit on these registered names or plugins "
                        "(every installed plugin when none is given)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="with --check: seconds each check process may run")
    parser.add_argument("--exhaustive", action="store_true", help="with --check: run every "
                        "strategy name, not one per class and launcher")
    return parser


def run(args: Namespace) -> int:
    if args.check is not None:
        from fulmen.testing.table import main as check

        return check(args.check, args.json, args.timeout, args.exhaustive)
    return _plugins(args.json, args.detect)


def _plugins(as_json: bool, detect: bool) -> int:
    manager = get_plugin_manager()
    errors: list[str] = []
    names: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    try:
        catalog = manager.catalog()
        for kind in KINDS:
            for e in catalog.entries(kind):
                problem = e.missing_target()  # found without importing any plugin's code
                lacking = []
                if problem is not None and problem.is_missing_dependency:
                    lacking, problem = [problem.module.split(".")[0]], None
                names[kind].append({**e.record.facts(), "plugin": e.plugin.name,
                                    "missing": [*e.record.missing(), *lacking],
                                    "broken": problem.sentence() if problem else None})
    except FulmenError as exc:
        errors.append(str(exc))
    plugins = [{"name": i.name, "value": i.value, "distribution": i.distribution,
                "version": i.version, "status": i.status, "reason": i.reason,
                "provides": i.provides} for i in manager.plugins.values()]
    report: dict[str, Any] = {"plugins": plugins, "names": names, "errors": errors}
    if detect and not errors:
        report["detect"] = detections(manager)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        _print(report)
    return 1 if errors else 0


def detections(manager: PluginManager) -> dict[str, Any]:
    env = manager.verdicts("fulmen_detect_environment", environ=dict(os.environ))
    acc = manager.verdicts("fulmen_detect_accelerator")
    out: dict[str, Any] = {
        "environment": [{"plugin": p, "answer": a} for p, a in env],
        "accelerator": [{"plugin": p, "answer": a} for p, a in acc],
    }
    try:
        from fulmen.kernel.compose import compose

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
    broken: dict[str, list[str]] = {}  # plugin -> why each of its broken records is
    for kind, entries in report["names"].items():
        for e in entries:
            needs.setdefault(e["plugin"], set()).update(e["missing"])
            if e["broken"]:
                broken.setdefault(e["plugin"], []).append(
                    f"{kind} {e['name']!r}: its target {e['target']!r} cannot be imported: "
                    f"{e['broken']}")
    for r in rows:
        origin = f"{r['distribution']} {r['version']}" if r["distribution"] else "runtime"
        status = r["status"] + (f": {r['reason']}" if r["reason"] else "")
        if broken.get(r["name"]):
            status = "BROKEN: " + "; ".join(broken[r["name"]])
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
            lacks += f"  [BROKEN: {e['broken']}]" if e["broken"] else ""
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
