"""Helpers logger plugins share (Lightning's ``_add_prefix`` and ``_flatten_dict``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def add_prefix(metrics: Mapping[str, Any], prefix: str | None, join_char: str = "-"
               ) -> dict[str, Any]:
    """``{"loss": 1}`` with prefix ``"train"`` -> ``{"train-loss": 1}``."""
    if not prefix:
        return dict(metrics)
    return {f"{prefix}{join_char}{k}": v for k, v in metrics.items()}


def flatten(params: Mapping[str, Any], separator: str = "/", prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``outer/inner`` keys; an empty mapping stays a value."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{separator}{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, separator, name))
        else:
            flat[name] = value
    return flat
