"""The ``fulmen`` command's entry point: picks the subcommand and runs it (``python -m fulmen``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fulmen.cli.commands import STAGES, SUBCOMMANDS, helps, run_subcommand, subcommand_parser
from fulmen.cli.parsing import CLIExit, chosen_subcommand, fail, top_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``fulmen`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        chosen = chosen_subcommand("fulmen", args_list, helps())
        if chosen is not None and SUBCOMMANDS[chosen].raw and args_list[0] == chosen:
            code: int = SUBCOMMANDS[chosen].load().main(args_list[1:])
            return code
        if chosen in STAGES:  # jsonargparse builds the stage's parser from the Trainer's
            from fulmen.cli.stages import FulmenCommand

            return FulmenCommand(args=args_list).exit_code
        parser = top_parser("fulmen", helps(), subcommand_parser, chosen)
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
