"""``fulmen doctor [--json]``: versions, cluster variables, detection, network and the main port,
to paste into a bug report (:mod:`fulmen.doctor`)."""

from __future__ import annotations

import json

from jsonargparse import ArgumentParser, Namespace

from fulmen.cli.commands import SUBCOMMANDS
from fulmen.cli.plugins import detections
from fulmen.kernel.manager import get_plugin_manager


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=SUBCOMMANDS["doctor"].help, exit_on_error=False,
                            allow_abbrev=False)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def run(args: Namespace) -> int:
    from fulmen.doctor import render, report

    data = report(detections(get_plugin_manager()))
    print(json.dumps(data, indent=2, sort_keys=True, default=str) if args.json else render(data))
    return 0
