"""The ``fulmen`` command (also ``python -m fulmen``): one jsonargparse parser with subcommands.

``fulmen fit|validate|test|predict`` build the model, data and trainer from LightningCLI-style
configs and flags and run the stage (:class:`fulmen.run_cli.FulmenCLI`, which scripts can use and
subclass as LightningCLI). ``fulmen plugins [--json] [--detect]`` lists every plugin with its
distribution and status, every registered name per kind, and with ``--detect`` what each
detector answers here; ``fulmen plugins --check [NAME...]`` runs the conformance kit
(:mod:`fulmen.testing`). ``fulmen doctor`` reports the environment for a bug report.
``fulmen checkpoint inspect|verify|diff``: see :mod:`fulmen.checkpoint.tool`.

Only the chosen subcommand's parser is built in full, so ``fulmen plugins`` imports no torch.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from jsonargparse import ArgumentParser, Namespace

from fulmen.errors import FulmenError
from fulmen.kernel.catalog import KINDS, PLURAL
from fulmen.kernel.manager import PluginManager, get_plugin_manager

STAGES = ("fit", "validate", "test", "predict")
SUBCOMMANDS = {
    "fit": "fit the model (then test it with test_after_fit: true)",
    "validate": "run one validation epoch", "test": "run one test epoch",
    "predict": "predict and write every rank's predictions to files",
    "plugins": "list plugins, registered names and detection; --check runs the conformance kit",
    "doctor": "report versions, cluster variables, detection, network and the main port, to "
              "paste into a bug report",
    "checkpoint": "inspect, verify or diff checkpoints: fulmen checkpoint inspect|verify|diff "
                  "--help",
}


class CLIExit(Exception):
    """Ends a command with an exit status (its message was printed already)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def fail(code: int, message: str) -> None:
    """Print ``message`` on stderr and end the command with ``code``."""
    print(message, file=sys.stderr)
    raise CLIExit(code)


def chosen_subcommand(prog: str, argv: Sequence[str], choices: dict[str, str]) -> str | None:
    """The subcommand named on the command line (None: none); an unknown one fails with the
    choices and a "did you mean"."""
    chosen = next((a for a in argv if not a.startswith("-")), None)
    if chosen is not None and chosen not in choices:
        close = difflib.get_close_matches(chosen, list(choices), n=1)
        fail(2, f"{prog}: error: invalid choice: {chosen!r} (choose from "
             f"{', '.join(choices)})" + (f"; did you mean {close[0]!r}?" if close else ""))
    return chosen


def top_parser(prog: str, subcommands: dict[str, str], build: Callable[[str], ArgumentParser],
               chosen: str | None, parser_kwargs: dict[str, Any] | None = None) -> ArgumentParser:
    """The top-level parser: ``--version`` and the subcommands, of which only ``chosen`` is
    built (by ``build``) in full; the others show in ``--help`` with their one-line help."""
    kwargs = {"exit_on_error": False, "allow_abbrev": False, **(parser_kwargs or {})}
    parser = ArgumentParser(prog=prog, description="fulmen: hardware-agnostic PyTorch training "
                            "on plugins", **kwargs)
    parser.add_argument("--version", action=_Versions, nargs=0,
                        help="print the versions of fulmen, torch and every distribution that "
                        "provides fulmen plugins, and exit")
    actions = parser.add_subcommands(required=False, dest="subcommand")
    for name, text in subcommands.items():
        sub = build(name) if name == chosen else ArgumentParser(description=text, **kwargs)
        actions.add_subcommand(name, sub, help=text)
    return parser


class _Versions(argparse.Action):
    """``--version``: print :func:`versions` as it is (no re-wrapping) and exit."""

    def __call__(self, parser: Any, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        print(versions())
        parser.exit()


def versions() -> str:
    """fulmen's, torch's and every plugin distribution's version, from package metadata only."""
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
    return "\n".join(lines)


def subcommand_parser(name: str) -> ArgumentParser:
    """The parser of ``plugins``, ``doctor`` or ``checkpoint``."""
    parser = ArgumentParser(description=SUBCOMMANDS[name], exit_on_error=False,
                            allow_abbrev=False)
    if name == "plugins":
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
    elif name == "doctor":
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "checkpoint":  # its own parser: inspect|verify|diff
        from fulmen.checkpoint.tool import main as checkpoint_main

        return checkpoint_main(args_list[1:])
    try:
        chosen = chosen_subcommand("fulmen", args_list, SUBCOMMANDS)
        if chosen in STAGES:  # jsonargparse builds the stage's parser from the Trainer's
            from fulmen.run_cli import FulmenCommand

            return FulmenCommand(args=args_list).exit_code
        parser = top_parser("fulmen", SUBCOMMANDS, subcommand_parser, chosen)
        if chosen is None and not any(a in ("-h", "--help", "--version") for a in args_list):
            parser.print_help()  # a bare `fulmen` is a request for help, not a mistake
            return 0
        try:
            config = parser.parse_args(args_list)
        except Exception as exc:
            fail(2, f"fulmen {chosen or ''}: error: {exc}\n(fulmen {chosen or ''} --help lists "
                 "every option)")
        assert chosen is not None
        return run_subcommand(chosen, config[chosen])
    except CLIExit as stop:
        return stop.code


def __getattr__(name: str) -> Any:
    """``FulmenCLI`` (also as ``LightningCLI``) and ``SaveConfigCallback``, imported on first use
    (they import torch; ``fulmen plugins`` does not)."""
    if name in ("FulmenCLI", "LightningCLI", "SaveConfigCallback"):
        from fulmen import run_cli

        return getattr(run_cli, "FulmenCLI" if name == "LightningCLI" else name)
    raise AttributeError(f"module 'fulmen.cli' has no attribute {name!r}")


def run_subcommand(name: str, args: Namespace) -> int:
    """Run ``plugins`` or ``doctor`` with their parsed arguments."""
    try:
        if name == "doctor":
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
