"""Lightning's ``remove_module_hooks`` (``lightning.pytorch.strategies.deepspeed``): drop every
hook registered on a module and its submodules (DeepSpeed's ZeRO-3 leaves its own behind)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["remove_module_hooks"]


def remove_module_hooks(model: Any) -> None:
    """Clear the forward, backward and state-dict hooks of every submodule of ``model``."""
    for module in model.modules():
        module._backward_hooks = OrderedDict()
        module._is_full_backward_hook = None
        module._forward_hooks = OrderedDict()
        module._forward_pre_hooks = OrderedDict()
        module._state_dict_hooks = OrderedDict()
        module._load_state_dict_pre_hooks = OrderedDict()
