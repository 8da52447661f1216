"""Lightning's parameter tying helpers: find the parameters a module shares between several
names (tied embeddings) and tie them again after something (moving to a device, XLA) broke
the sharing."""

from __future__ import annotations

from typing import Any

__all__ = ["find_shared_parameters", "set_shared_parameters"]


def find_shared_parameters(module: Any) -> list[list[str]]:
    """Each group of names (``["encoder.weight", "decoder.weight"]``) one parameter has."""
    names: dict[Any, list[str]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        names.setdefault(param, []).append(name)
    return [group for group in names.values() if len(group) > 1]


def set_shared_parameters(module: Any, shared_params: list[list[str]]) -> Any:
    """Tie again each group :func:`find_shared_parameters` returned: every name of a group gets
    the first name's parameter. Returns ``module``."""
    for group in shared_params:
        reference = module.get_parameter(group[0])
        for path in group[1:]:
            owner, _, name = path.rpartition(".")
            setattr(module.get_submodule(owner) if owner else module, name, reference)
    return module
