"""Lightning's ``is_param_in_hook_signature``: whether a hook accepts a given argument."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["is_param_in_hook_signature"]


def is_param_in_hook_signature(hook_fx: Callable[..., Any], param: str, explicit: bool = False,
                               min_args: int | None = None) -> bool:
    """Whether ``hook_fx`` (a method; ``self`` is skipped, a decorator's ``__wrapped__`` is
    followed) names ``param``, takes ``*args`` (unless ``explicit``), or has at least
    ``min_args`` arguments."""
    hook_fx = getattr(hook_fx, "__wrapped__", hook_fx)
    spec = inspect.getfullargspec(hook_fx)
    args = spec.args[1:]
    return param in args or (not explicit and spec.varargs is not None) or (
        isinstance(min_args, int) and len(args) >= min_args)
