"""Lightning 1.x's ``Trainer.add_argparse_args`` / ``Trainer.from_argparse_args``, as functions
(Lightning 2 removed the methods; ``fulmen migrate`` rewrites calls to these):

    parser = add_argparse_args(Trainer, parser)      # --max_epochs, --accelerator, ...
    trainer = from_argparse_args(Trainer, args, logger=False)

For new code, ``fulmen.cli.LightningCLI`` (``FulmenCLI``) builds the parser from the signatures.
"""

from __future__ import annotations

import argparse
import ast
import inspect
from typing import Any, TypeVar

T = TypeVar("T")


def _flag_type(default: Any) -> Any:
    if isinstance(default, bool):
        return _parse_bool
    if isinstance(default, (int, float)):
        return _parse_literal
    return _parse_literal


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "y", "on"):
        return True
    if lowered in ("0", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: expected true or false")


def _parse_literal(text: str) -> Any:
    """``3`` -> 3, ``0.5`` -> 0.5, ``None`` -> None, ``[0, 1]`` -> [0, 1]; else the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parameters(cls: type) -> list[inspect.Parameter]:
    return [p for name, p in inspect.signature(cls).parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name != "self"]


def add_argparse_args(cls: type, parent_parser: argparse.ArgumentParser, *,
                      use_argument_group: bool = True) -> argparse.ArgumentParser:
    """Add a ``--name`` option for every argument of ``cls`` (a Trainer) to ``parent_parser``,
    with its default; returns ``parent_parser`` (as Lightning 1.x did)."""
    group: Any = (parent_parser.add_argument_group(cls.__name__) if use_argument_group
                  else parent_parser)
    for parameter in _parameters(cls):
        default = None if parameter.default is inspect.Parameter.empty else parameter.default
        group.add_argument(f"--{parameter.name}", dest=parameter.name, default=default,
                           type=_flag_type(default), help=f"{cls.__name__}({parameter.name}=...)"
                           f" (default: {default!r})")
    return parent_parser


def from_argparse_args(cls: type[T], args: argparse.Namespace | dict[str, Any],
                       **kwargs: Any) -> T:
    """``cls(**the arguments in args that cls takes, **kwargs)``; kwargs win."""
    given = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    accepted = {p.name for p in _parameters(cls)}
    return cls(**{**{k: v for k, v in given.items() if k in accepted}, **kwargs})
