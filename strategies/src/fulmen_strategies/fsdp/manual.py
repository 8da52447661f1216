"""Manual optimization under FSDP2: ``training_step`` as a series of FSDP forwards, each ended
by the ``manual_backward`` that follows it.

Under automatic optimization ``training_step`` is one FSDP forward of the root module
(``register_fsdp_forward_method``): the pre-forward gathers the root's parameters, the
post-forward registers FSDP's pre-backward hook on the returned loss, and the Trainer's
backward, after the step returned, reduce-scatters the gradients into the sharded parameters
the optimizer holds. A ``manual_backward`` inside ``training_step`` would run before that
post-forward: no pre-backward hook on the loss, so FSDP queues no post-backward callback, the
gradients stay, unreduced, on the gathered (unsharded) parameters, and ``opt.step()`` over
the sharded ones sees no gradient at all.

``ManualForwards`` runs a manual ``training_step`` without that wrapper and delimits the
FSDP forwards itself:

* a forward of the root's parameter group starts at the first call of a module that owns
  some of them (lazily: no all-gather when nothing more runs after a backward);
* ``manual_backward`` ends it (FSDP's post-forward on the loss) so FSDP's own hooks reduce
  the gradients, averaged over the ranks, into the sharded parameters;
* the next module call after the backward (and after ``opt.step()``) starts a new forward:
  the parameters are gathered again, updated, with the ``requires_grad`` flags that
  ``toggle_optimizer`` set on the sharded parameters.

Submodules sharded as their own units (``auto_wrap_policy``) run FSDP's hooks on their own.
One forward and one backward per step costs what automatic optimization costs: one
all-gather for the forward, one for the backward (when resharded after forward) and one
reduce-scatter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.distributed.fsdp import FSDPModule
from torch.distributed.fsdp._fully_shard._fsdp_common import TrainingState


def _gathered_by_root(root: torch.nn.Module) -> list[torch.nn.Module]:
    """The submodules of ``root`` that own parameters of the root's FSDP unit: everything
    below ``root`` that holds parameters itself, not inside a submodule sharded on its own."""
    found: list[torch.nn.Module] = []
    todo = list(root.children())
    while todo:
        module = todo.pop()
        if isinstance(module, FSDPModule):
            continue
        if next(module.parameters(recurse=False), None) is not None:
            found.append(module)
        todo.extend(module.children())
    return found


class ManualForwards:
    """The FSDP forwards of manual ``training_step`` calls on one sharded root module."""

    def __init__(self, root: torch.nn.Module) -> None:
        assert isinstance(root, FSDPModule)
        self.root = root
        self.state = root._get_fsdp_state()
        self._members = {id(m) for m in _gathered_by_root(root)}
        self.active = False
        self._ended = False  # a backward of this step ended a forward of the root

    @contextlib.contextmanager
    def training_step(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
        """Inside: module calls start the root's forward when it is not running; yields the
        step's arguments cast as FSDP's pre-forward casts them (mixed precision)."""
        state = self.state
        state._lazy_init()  # the root is the root, whichever unit runs first
        args, kwargs = state._cast_forward_inputs(args, kwargs)
        handle = torch.nn.modules.module.register_module_forward_pre_hook(self._before_call)
        self.active, self._ended = True, False
        try:
            yield args, kwargs
        finally:
            self.active = False
            handle.remove()

    def _before_call(self, module: torch.nn.Module, args: Any) -> None:
        # IDLE: neither inside the root's forward nor in a backward (activation checkpointing
        # recomputes forwards there, and FSDP's pre-backward has gathered the parameters)
        if id(module) in self._members and self.state._training_state is TrainingState.IDLE:
            self.state._pre_forward(self.root, (), {})

    def end(self, output: Any) -> Any:
        """End the running forward, if any, with the step's output (at the end of the step)."""
        if self.state._training_state is TrainingState.FORWARD:
            return self.state._post_forward(self.root, (), output)
        return output

    def before_backward(self, loss: torch.Tensor) -> torch.Tensor:
        """The loss to run backward on: it ends the running forward, so FSDP's pre-backward
        hook is on it (gathering the parameters again when they were resharded, queueing the
        reduce-scatter of the gradients at the end of the backward). A loss of a forward that
        an earlier backward ended (a second backward through a retained graph, after the
        parameters were resharded) gets the hook too; other losses (of submodules sharded on
        their own, of ``self(x)``) have FSDP's hooks already."""
        if self.state._training_state is TrainingState.FORWARD:
            self._ended = True
            return self.state._post_forward(self.root, (), loss)
        if self._ended:
            return self.state._register_pre_backward_hook(loss)
        return loss
