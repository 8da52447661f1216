"""Optimizer states keyed by parameter names: the canonical form a checkpoint holds
(``torch.distributed.checkpoint.state_dict.get_optimizer_state_dict``'s), converted from and to
torch's numbered ``Optimizer.state_dict()``. The default of ``Strategy.optimizer_state`` and
``Strategy.load_optimizer_state``, and what sharded strategies build on; it imports nothing else
of fulmen but its errors (also available from :mod:`fulmen.checkpoint.canonical`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fulmen.errors import ConfigurationError

if TYPE_CHECKING:
    import torch


def param_names(module: torch.nn.Module | None, optimizer: Any) -> list[str] | None:
    """The name of every parameter ``optimizer`` updates, in its ``param_groups`` order, or
    None when one of them is not a parameter of ``module``."""
    if module is None:
        return None
    names = {id(p): n for n, p in module.named_parameters(remove_duplicate=False)}
    order = [names.get(id(p)) for g in optimizer.param_groups for p in g["params"]]
    return None if any(n is None for n in order) else order  # type: ignore[return-value]


def is_keyed_by_name(state: Mapping[str, Any]) -> bool:
    """Whether an optimizer state names its parameters (canonical) rather than numbering them
    (``torch.optim.Optimizer.state_dict``)."""
    params = [p for g in state.get("param_groups", []) for p in g.get("params", [])]
    return bool(params) and all(isinstance(p, str) for p in params)


def by_name(state: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """A numbered optimizer state (torch's form) keyed by parameter names instead."""
    numbers = [p for g in state["param_groups"] for p in g["params"]]
    if len(numbers) != len(names):
        raise ConfigurationError(
            f"the checkpoint's optimizer state covers {len(numbers)} parameters, the optimizer "
            f"here {len(names)}: it was saved for another model or optimizer set-up")
    rename = dict(zip(numbers, names))
    return {"state": {rename[k]: v for k, v in state.get("state", {}).items() if k in rename},
            "param_groups": [{**g, "params": [rename[p] for p in g["params"]]}
                             for g in state["param_groups"]]}


def by_number(state: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """A canonical (named) optimizer state in torch's numbered form for an optimizer whose
    parameters are ``names``, in order."""
    number = {n: i for i, n in enumerate(names)}
    missing = [p for g in state["param_groups"] for p in g["params"] if p not in number]
    if missing:
        raise ConfigurationError(f"the checkpoint's optimizer state names parameters this "
                                 f"model lacks: {missing[:8]}; was it saved from another model?")
    return {"state": {number[k]: v for k, v in state.get("state", {}).items()},
            "param_groups": [{**g, "params": [number[p] for p in g["params"]]}
                             for g in state["param_groups"]]}


def optimizer_state(module: torch.nn.Module | None, optimizer: Any) -> dict[str, Any]:
    """``optimizer``'s state keyed by the names of ``module``'s parameters (torch's numbered
    form when the optimizer updates tensors ``module`` does not own)."""
    state = dict(optimizer.state_dict())
    names = param_names(module, optimizer)
    return by_name(state, names) if names is not None else state


def numbered(module: torch.nn.Module | None, optimizer: Any,
             state: Mapping[str, Any]) -> dict[str, Any]:
    """A named (canonical) or numbered optimizer state in torch's numbered form for
    ``optimizer`` (whose parameters belong to ``module``)."""
    if not is_keyed_by_name(state):
        return dict(state)
    names = param_names(module, optimizer)
    if names is None:
        raise ConfigurationError("this optimizer updates tensors that are not parameters of "
                                 "the set-up model, so a state keyed by parameter names "
                                 "cannot be matched to them")
    return by_number(state, names)


def load_optimizer_state(module: torch.nn.Module | None, optimizer: Any,
                         state: Mapping[str, Any]) -> None:
    """Restore a named (canonical) or numbered optimizer state into ``optimizer``."""
    optimizer.load_state_dict(numbered(module, optimizer, state))
