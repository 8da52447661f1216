"""Activation checkpointing: recompute chosen blocks' activations in backward instead of keeping
them (torch's non-reentrant ``torch.utils.checkpoint``).

``policy``: a set (or other iterable) of module classes — every instance is checkpointed, as
Lightning's ``activation_checkpointing_policy={TransformerBlock}`` — or a callable
``policy(module) -> bool``. The block's ``forward`` is replaced on the instance, so the module
tree, parameter names and checkpoint keys stay exactly as they were; apply it before wrapping
(DDP, ``fully_shard``), so the wrapper's hooks surround the recomputation.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch

from fulmen import ConfigurationError

Policy = Iterable[type[torch.nn.Module]] | Callable[[torch.nn.Module], bool]


def check_policy(owner: str, policy: Policy | None) -> Callable[[torch.nn.Module], bool] | None:
    """The policy as a predicate; a bad one is a ConfigurationError naming ``owner``."""
    if policy is None:
        return None
    if isinstance(policy, type):
        policy = {policy}
    if callable(policy):
        return policy
    classes = tuple(policy)
    bad = [c for c in classes if not (isinstance(c, type) and issubclass(c, torch.nn.Module))]
    if bad or not classes:
        raise ConfigurationError(
            f"{owner}(activation_checkpointing_policy={policy!r}): give a set of torch.nn.Module "
            "subclasses (e.g. {TransformerBlock}) or a callable module -> bool")
    return lambda module: isinstance(module, classes)


def apply(module: torch.nn.Module, predicate: Callable[[torch.nn.Module], bool] | None,
          owner: str = "activation_checkpointing_policy") -> int:
    """Checkpoint every submodule (not the root) the predicate selects; returns how many it
    selects (already checkpointed ones included, so applying twice is harmless). A policy that
    selects nothing warns, listing the model's module classes, since it would save no memory."""
    if predicate is None:
        return 0
    count = 0
    for name, child in module.named_modules():
        if name and predicate(child):
            count += 1
            if not isinstance(child.forward, _Checkpointed):
                child.forward = _Checkpointed(child.forward)
    if count == 0:
        classes = sorted({type(m).__name__ for n, m in module.named_modules() if n})
        warnings.warn(f"{owner}: activation_checkpointing_policy matches no submodule of "
                      f"{type(module).__name__}, so nothing is checkpointed; its module classes "
                      f"are {', '.join(classes) or '(none)'}", UserWarning, stacklevel=2)
    return count


class _Checkpointed:
    """The original bound ``forward``, run under non-reentrant checkpointing while training."""

    def __init__(self, forward: Callable[..., Any]) -> None:
        self.forward = forward
        functools.update_wrapper(self, forward)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():
            return self.forward(*args, **kwargs)
        from torch.utils.checkpoint import checkpoint

        return checkpoint(self.forward, *args, use_reentrant=False, **kwargs)
