"""What every ``fulmen`` subcommand's parsing shares: the top-level parser (only the chosen
subcommand built in full), the "did you mean" for a misspelt subcommand, ``--version`` and the
way a command ends with an exit status."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from jsonargparse import ArgumentParser


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
