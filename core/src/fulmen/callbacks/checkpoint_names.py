"""Filling in checkpoint file name templates like ``"{epoch}-{val/loss:.2f}"``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from fulmen.errors import ConfigurationError

_FIELD = re.compile(r"\{([^{}:]+)(?::([^{}]*))?\}")


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value


def format_name(template: str | None, metrics: Mapping[str, Any], *, prefix: str | None = None,
                auto_insert_metric_name: bool = True, join: str = "-", equals: str = "=",
                owner: str = "ModelCheckpoint") -> str:
    """``template`` (default ``"{epoch}-{step}"``) with each ``{name[:spec]}`` replaced by
    ``name=value`` (just ``value`` without ``auto_insert_metric_name``). Names may hold ``/``,
    ``.`` or ``@``. A name that is not in ``metrics`` is an error listing those that are."""
    template = template or "{epoch}" + join + "{step}"

    def fill(match: re.Match[str]) -> str:
        name, spec = match.group(1), match.group(2) or ""
        if name not in metrics:
            raise ConfigurationError(
                f"{owner} uses {{{name}}}, which was not logged; available: "
                f"{sorted(metrics)}. Log {name!r} with self.log, or use one of these")
        value = format(_plain(metrics[name]), spec)
        return f"{name}{equals}{value}" if auto_insert_metric_name else value

    name = _FIELD.sub(fill, template)
    return join.join((prefix, name)) if prefix is not None else name
