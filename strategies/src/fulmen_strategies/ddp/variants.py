"""The ``ddp`` strategy's registered names, one table: the plugin's records are made from it,
and :class:`~fulmen_strategies.ddp.strategy.DDPStrategy` reads its own name from it. Nothing here
imports torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: name, the ``DDPStrategy`` arguments it stands for, whether it works in a notebook, description
VARIANTS: tuple[tuple[str, dict[str, Any], bool, str], ...] = (
    ("ddp", {}, False, "re-runs the script once per process (like torchrun)"),
    ("ddp_spawn", {"start_method": "spawn"}, False,
     "spawned workers (pickles the model); returns to the caller"),
    ("ddp_fork", {"start_method": "fork"}, True,
     "forked workers (no pickling; CPU, or GPUs before CUDA is touched)"),
    ("ddp_notebook", {"start_method": "fork"}, True, "ddp_fork, for Jupyter notebooks"),
    ("ddp_find_unused_parameters_true", {"find_unused_parameters": True}, False,
     "ddp for models whose steps skip some parameters"),
    ("ddp_spawn_find_unused_parameters_true",
     {"start_method": "spawn", "find_unused_parameters": True}, False,
     "ddp_spawn for models whose steps skip some parameters"),
)


def variant_name(variants: Sequence[tuple[str, Mapping[str, Any], Any, Any]],
                 given: Mapping[str, Any], defaults: Mapping[str, Any]) -> str | None:
    """The first registered name whose arguments are ``given`` (each argument a variant does
    not set taking its value from ``defaults``); None when no name stands for them."""
    for name, kwargs, *_ in variants:
        if all(kwargs.get(key, defaults[key]) == value for key, value in given.items()):
            return name
    return None
