"""``Precision``: numeric format of parameters, inputs and the backward/step path.

The base class is full 32-bit precision and does nothing special; subclasses override what they
change. The strategy calls these around the user's code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fulmen.api.naming import Named

if TYPE_CHECKING:
    import torch


#: what the base class's ``forward_context`` returns: stateless and reentrant, so one is shared
_NO_CONTEXT = contextlib.nullcontext()


class Precision(Named):
    """32-bit float precision; the base every precision backend extends.

    What strategies may read (the contract): ``param_dtype``, ``compute_dtype``,
    ``reduce_dtype``, ``scaler`` and ``scales_loss`` below, and every method.
    """

    device_type: str = "cpu"
    #: The loss scaler ``backward`` multiplies the loss with (a ``torch.amp.GradScaler`` for
    #: ``16-mixed``), or None. A strategy that shards gradients may replace it, before the first
    #: step, with a compatible scaler (``scale``, ``unscale_``, ``step``, ``update``,
    #: ``state_dict``), e.g. FairScale's ``ShardedGradScaler``.
    scaler: Any = None

    @property
    def param_dtype(self) -> torch.dtype | None:
        """The dtype ``convert_module`` gives the parameters (``bf16-true``: bfloat16); None when
        they stay as they are (float32, also under mixed precision)."""
        return None

    @property
    def compute_dtype(self) -> torch.dtype | None:
        """The dtype forward math runs in (``bf16-mixed``: bfloat16 through autocast); None when
        it is the parameters' dtype."""
        return None

    @property
    def reduce_dtype(self) -> torch.dtype | None:
        """The dtype a sharding strategy reduces gradients in across processes (FSDP2's
        ``MixedPrecisionPolicy(reduce_dtype=)``; ``bf16-mixed``: float32, ``bf16-true``:
        bfloat16); None when gradients are reduced in their own dtype."""
        return None

    @property
    def scales_loss(self) -> bool:
        """Whether ``backward`` scales the loss, so gradients must be unscaled
        (``unscale_gradients``) before they are clipped or inspected."""
        return self.scaler is not None

    def connect(self, device_type: str) -> None:
        """Called once composition knows the accelerator's torch device type."""
        self.device_type = device_type

    def convert_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Cast parameters and buffers as this precision requires."""
        return module

    def convert_input(self, data: Any) -> Any:
        """Cast floating-point tensors of a batch as this precision requires."""
        return data

    def convert_output(self, data: Any) -> Any:
        """Cast outputs back to the default float type where the precision changed them."""
        return data

    def forward_context(self) -> contextlib.AbstractContextManager[Any]:
        """Context around forward / *_step calls (autocast for mixed precision). Default: no
        context (a subclass may write it as a ``contextlib.contextmanager`` generator)."""
        return _NO_CONTEXT

    def module_init_context(self) -> contextlib.AbstractContextManager[None]:
        """Context in which new modules get this precision's parameter dtype (``*-true``)."""
        return contextlib.nullcontext()

    def autocast(self) -> contextlib.AbstractContextManager[None]:
        """Alias of ``forward_context`` for users of ``Lite.autocast()``."""
        return self.forward_context()

    def backward(self, tensor: torch.Tensor, *args: Any,
                 run_backward: Callable[..., None] | None = None, **kwargs: Any) -> None:
        """Run backward on the (possibly scaled) loss: ``tensor.backward(*args, **kwargs)``, or
        ``run_backward(tensor, *args, **kwargs)`` when given (the Trainer passes a user's
        ``Module.backward`` override). A subclass that scales the loss passes the scaled tensor
        to ``run_backward`` the same way."""
        if run_backward is not None:
            run_backward(tensor, *args, **kwargs)
        else:
            tensor.backward(*args, **kwargs)

    def unscale_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        """Undo loss scaling on the gradients before they are clipped or inspected."""

    def optimizer_step(self, optimizer: torch.optim.Optimizer,
                       closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        """Step the optimizer. ``closure`` computes loss and gradients; ``after_closure`` runs
        between them and the update (hooks, clipping)."""
        if closure is None:
            if after_closure is not None:
                after_closure()
            return optimizer.step()
        if after_closure is None:
            return optimizer.step(closure)

        def wrapped() -> Any:
            result = closure()
            if after_closure is not None:
                after_closure()
            return result

        return optimizer.step(wrapped)

    def state_dict(self) -> dict[str, Any]:
        """State to put in checkpoints (a loss scaler's)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
