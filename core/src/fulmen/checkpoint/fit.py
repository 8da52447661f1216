"""Does a state dict fit a module? Errors that name the checkpoint, the keys and both shapes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fulmen.errors import ConfigurationError


def shape_of(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return tuple(int(n) for n in shape) if shape is not None else None


def misfits(own: Mapping[str, Any], given: Mapping[str, Any]
            ) -> tuple[list[str], list[str], list[tuple[str, Any, Any]]]:
    """Missing keys, unexpected keys, and ``(key, checkpoint shape, model shape)`` for the
    keys both have with different shapes."""
    missing = sorted(set(own) - set(given))
    unexpected = sorted(set(given) - set(own))
    changed = [(key, shape_of(given[key]), shape_of(own[key])) for key in sorted(own)
               if key in given and shape_of(own[key]) != shape_of(given[key])]
    return missing, unexpected, changed


def fit_error(path: Any, module: Any, state: Mapping[str, Any],
              cause: BaseException | None = None, what: str | None = None,
              strict: bool = True) -> ConfigurationError:
    """The error for ``state`` (read from ``path``) that does not fit ``module``."""
    own = module.state_dict()
    missing, unexpected, changed = misfits(own, state)
    name = what or type(module).__name__
    parts = []
    if strict or missing or unexpected:
        parts.append(f"missing keys {few(missing)}, unexpected keys {few(unexpected)}")
    if changed:
        parts.append("shape mismatches: " + "; ".join(
            f"{key}: checkpoint {_dims(a)}, model {_dims(b)}" for key, a, b in changed[:8])
            + (f" and {len(changed) - 8} more" if len(changed) > 8 else ""))
    if not changed and cause is not None:
        parts.append(str(cause).strip().replace("\n", " ").replace("\t", ""))
    hint = " Pass strict=False to load the keys that match." if strict and not changed else ""
    return ConfigurationError(f"checkpoint {str(path)!r} does not fit {name}: "
                              f"{'; '.join(parts)}. Was it saved from another model?{hint}")


def check_fit(path: Any, module: Any, state: Mapping[str, Any], strict: bool = True,
              what: str | None = None) -> None:
    """Raise :func:`fit_error` when ``state`` does not fit ``module`` (keys with ``strict``,
    and shapes)."""
    missing, unexpected, changed = misfits(module.state_dict(), state)
    if changed or (strict and (missing or unexpected)):
        raise fit_error(path, module, state, what=what, strict=strict)


def few(keys: list[str]) -> str:
    return str(keys) if len(keys) <= 8 else f"{keys[:8]} and {len(keys) - 8} more"


def _dims(shape: Any) -> str:
    return "scalar" if shape == () else str(list(shape)) if shape is not None else "not a tensor"
