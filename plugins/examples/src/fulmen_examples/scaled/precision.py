"""``StaticScalePrecision``: float32 whose loss is multiplied by ``scale`` before backward and
whose gradients are divided by it before they are clipped or applied."""

from collections.abc import Callable
from typing import Any

import torch

from fulmen import Precision


class StaticScalePrecision(Precision):
    def __init__(self, scale: float = 1024.0) -> None:
        self.scale = float(scale)
        self._unscaled: set[int] = set()  # optimizers whose gradients are unscaled this step

    def backward(self, tensor: torch.Tensor, *args: Any,
                 run_backward: Callable[..., None] | None = None, **kwargs: Any) -> None:
        super().backward(tensor * self.scale, *args, run_backward=run_backward, **kwargs)

    def unscale_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        if id(optimizer) in self._unscaled:
            return
        self._unscaled.add(id(optimizer))
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.div_(self.scale)

    def optimizer_step(self, optimizer: torch.optim.Optimizer,
                       closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        loss = closure() if closure is not None else None
        self.unscale_gradients(optimizer)
        if after_closure is not None:
            after_closure()
        optimizer.step()
        self._unscaled.discard(id(optimizer))
        return loss

    def state_dict(self) -> dict[str, Any]:
        return {"scale": self.scale}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scale = float(state["scale"])
