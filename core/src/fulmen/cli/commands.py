"""The ``fulmen`` subcommands: one table, and the one way each kind of subcommand is run.

Every subcommand is a row of :data:`SUBCOMMANDS`: its one-line help (shown by ``fulmen --help``
without importing it) and the module that implements it, imported only when it is chosen, so
``fulmen plugins`` imports no torch. A module implements one of two shapes:

- ``parsed`` (the default): ``build_parser() -> jsonargparse.ArgumentParser`` and
  ``run(args: Namespace) -> int``; the top-level parser parses the command line, with
  ``--help`` and "did you mean" for every subcommand alike.
- ``raw``: ``main(argv: list[str]) -> int`` gets the arguments after the subcommand's name
  as they are (a command with its own sub-subcommands, or one that passes them on).

The stages (``fit``, ``validate``, ``test``, ``predict``) are those of
:class:`fulmen.cli.stages.FulmenCLI`, with LightningCLI's conventions.

To add a subcommand, add a module under ``fulmen/cli/`` and a row here.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any

from jsonargparse import ArgumentParser, Namespace

from fulmen.errors import FulmenError


@dataclass(frozen=True)
class Subcommand:
    """One row: ``help`` (one line), ``module`` (imported when chosen) and how it is run."""

    help: str
    module: str
    raw: bool = False

    def load(self) -> Any:
        return importlib.import_module(self.module)


STAGES = ("fit", "validate", "test", "predict")
_STAGE_MODULE = "fulmen.cli.stages"
SUBCOMMANDS: dict[str, Subcommand] = {
    "fit": Subcommand("fit the model (then test it with test_after_fit: true)", _STAGE_MODULE),
    "validate": Subcommand("run one validation epoch", _STAGE_MODULE),
    "test": Subcommand("run one test epoch", _STAGE_MODULE),
    "predict": Subcommand("predict and write every rank's predictions to files", _STAGE_MODULE),
    "plugins": Subcommand("list plugins, registered names and detection; --check runs the "
                          "conformance kit", "fulmen.cli.plugins"),
    "doctor": Subcommand("report versions, cluster variables, detection, network and the main "
                         "port, to paste into a bug report", "fulmen.cli.doctor"),
    "checkpoint": Subcommand("inspect, convert, verify or diff checkpoints: fulmen checkpoint "
                             "inspect|convert|verify|diff --help", "fulmen.checkpoint.tool",
                             raw=True),
    "run": Subcommand("run a Lightning script unmodified on fulmen: fulmen run SCRIPT "
                      "[ARGS...] (lightning, pytorch_lightning, lightning_fabric resolve to "
                      "fulmen)", "fulmen.dropin.run", raw=True),
    "migrate": Subcommand("rewrite Lightning scripts for fulmen (imports, 1.x idioms): fulmen "
                          "migrate PATH... [--diff] [--check]", "fulmen.dropin.migrate",
                          raw=True),
}


def helps() -> dict[str, str]:
    """Subcommand name → its one-line help."""
    return {name: row.help for name, row in SUBCOMMANDS.items()}


def subcommand_parser(name: str) -> ArgumentParser:
    """The full parser of the parsed subcommand ``name`` (not a stage); a raw one's parser only
    describes it (its module parses its own arguments)."""
    row = SUBCOMMANDS[name]
    if row.raw:
        return ArgumentParser(description=row.help, exit_on_error=False, allow_abbrev=False)
    parser: ArgumentParser = row.load().build_parser()
    return parser


def run_subcommand(name: str, args: Namespace) -> int:
    """Run the parsed subcommand ``name``; a :class:`~fulmen.errors.FulmenError` is printed
    and ends it with status 1."""
    try:
        code: int = SUBCOMMANDS[name].load().run(args)
        return code
    except FulmenError as exc:
        print(f"fulmen: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `fulmen plugins | head`: the reader left; that is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
