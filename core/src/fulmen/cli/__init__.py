"""The ``fulmen`` command (also ``python -m fulmen``): one jsonargparse parser with subcommands.

``fulmen fit|validate|test|predict`` build the model, data and trainer from LightningCLI-style
configs and flags and run the stage (:class:`fulmen.cli.stages.FulmenCLI`, which scripts can use and
subclass as LightningCLI). ``fulmen plugins [--json] [--detect]`` lists every plugin with its
distribution and status, every registered name per kind, and with ``--detect`` what each
detector answers here; ``fulmen plugins --check [NAME...]`` runs the conformance kit
(:mod:`fulmen.testing`). ``fulmen doctor`` reports the environment for a bug report.
``fulmen checkpoint inspect|convert|verify|diff``: see :mod:`fulmen.checkpoint.tool`.

The package: :mod:`~fulmen.cli.dispatch` (the entry point, ``main``), :mod:`~fulmen.cli.commands`
(the table of subcommands; add one there), :mod:`~fulmen.cli.parsing` (what they share), one
module per subcommand.

Only the chosen subcommand's parser is built in full, so ``fulmen plugins`` imports no torch.
"""

from __future__ import annotations

from typing import Any

from fulmen.cli.dispatch import main

__all__ = ["FulmenCLI", "LightningCLI", "SaveConfigCallback", "main"]


def __getattr__(name: str) -> Any:
    """``FulmenCLI`` (also as ``LightningCLI``) and ``SaveConfigCallback``, imported on first use
    (they import torch; ``fulmen plugins`` does not)."""
    if name in ("FulmenCLI", "LightningCLI", "SaveConfigCallback"):
        from fulmen.cli import stages

        return getattr(stages, "FulmenCLI" if name == "LightningCLI" else name)
    raise AttributeError(f"module 'fulmen.cli' has no attribute {name!r}")
