"""Tensor-parallel plans checked before they are applied: torch's ``parallelize_module`` skips a
plan key that names no submodule with only a warning, leaving that layer whole on every rank
(a silently wrong model). ``parallelize_module`` here refuses it, listing the module names."""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatch
from typing import Any

import torch

from fulmen import ConfigurationError


def check_tp_plan(module: torch.nn.Module, plan: Mapping[str, Any]) -> None:
    """Raise ``ConfigurationError`` for every key of ``plan`` (dotted paths, ``fnmatch``
    patterns per part, as torch resolves them) that matches no submodule of ``module``."""
    names = [name for name, _ in module.named_modules() if name]
    missing = [key for key in plan if key and not any(_matches(key, n) for n in names)]
    if missing:
        raise ConfigurationError(
            f"tensor-parallel plan for {type(module).__name__}: "
            f"{', '.join(map(repr, missing))} {'name' if len(missing) > 1 else 'names'} no "
            f"submodule (torch would skip {'them' if len(missing) > 1 else 'it'} and leave the "
            f"layer whole on every rank). Its modules are: {', '.join(names) or '(none)'}")


def _matches(key: str, name: str) -> bool:
    parts, have = key.split("."), name.split(".")
    return len(parts) == len(have) and all(fnmatch(h, p) for p, h in zip(parts, have))


def parallelize_module(module: torch.nn.Module, device_mesh: Any,
                       plan: Mapping[str, Any]) -> torch.nn.Module:
    """``torch.distributed.tensor.parallel.parallelize_module`` after ``check_tp_plan``."""
    from torch.distributed.tensor.parallel import parallelize_module as apply

    check_tp_plan(module, plan)
    return apply(module, device_mesh, dict(plan))
