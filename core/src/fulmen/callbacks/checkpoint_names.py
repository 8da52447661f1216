"""Filling in checkpoint file name templates like ``"{epoch}-{val/loss:.2f}"``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from fulmen.utilities.rank_zero import WarningCache

_FIELD = re.compile(r"\{([^{}:]+)(?::([^{}]*))?\}")
_MISSING = WarningCache()


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value


def format_name(template: str | None, metrics: Mapping[str, Any], *, prefix: str | None = None,
                auto_insert_metric_name: bool = True, join: str = "-", equals: str = "=",
                owner: str = "ModelCheckpoint") -> str:
    """``template`` (default ``"{epoch}-{step}"``) with each ``{name[:spec]}`` replaced by
    ``name=value`` (just ``value`` without ``auto_insert_metric_name``). Names may hold ``/``,
    ``.`` or ``@``. A name that is not in ``metrics`` is written as 0, as Lightning does, with a
    warning (once per name) listing the names that are there."""
    template = template or "{epoch}" + join + "{step}"

    def fill(match: re.Match[str]) -> str:
        name, spec = match.group(1), match.group(2) or ""
        if name in metrics:
            value = _plain(metrics[name])
        else:
            value = 0
            _MISSING.warn(f"{owner} uses {{{name}}}, which is not logged (yet), so it is "
                          f"written as {name}{equals}0 (Lightning's rule). Logged: "
                          f"{sorted(metrics)}. Log {name!r} with self.log before the "
                          "checkpoint is saved, or fix the name", category=RuntimeWarning)
        text = format(value, spec)
        return f"{name}{equals}{text}" if auto_insert_metric_name else text

    name = _FIELD.sub(fill, template)
    return join.join((prefix, name)) if prefix is not None else name
