"""One training batch: :class:`AutomaticStep` (the Trainer optimizes) and :class:`ManualStep`
(``training_step`` does, ``automatic_optimization = False``). The epoch loop
(:mod:`fulmen.trainer.epoch_loop`) calls one of them per batch; nothing else runs a training
step.

Automatic optimization runs each batch in Lightning's order. For the batch that ends an
accumulation window::

    strategy.optimizer_step(optimizer, closure, after_closure)      # or Module.optimizer_step
      -> optimizer.step(closure)       the optimizer's step pre-hooks run here, first
           -> closure():  training_step -> on_before_zero_grad, zero_grad (first batch of the
                          window) -> on_before_backward, backward, on_after_backward
           -> after_closure(): on_before_optimizer_step, configure_gradient_clipping
           -> the update; the optimizer's step post-hooks

A batch inside the window runs the closure alone, under ``strategy.no_backward_sync()``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch

from fulmen import compiling
from fulmen.errors import ConfigurationError
from fulmen.trainer.batches import batch_idx_as_taken, overridden, profiled_step
from fulmen.trainer.finite import NonFiniteWatch, loss_of_output
from fulmen.utilities.rank_zero import WarningCache

if TYPE_CHECKING:
    from fulmen.trainer.loop_host import LoopHost
    from fulmen.trainer.results import Results

_LEAF_LOSS = WarningCache()


def training_step_call(trainer: LoopHost) -> Any:
    """``strategy.step("training_step", batch, batch_idx)`` as a one-call function (profiled
    when a profiler records, timed on its first call when the module is compiled; without
    ``batch_idx`` for a ``training_step`` that does not take it, as Lightning)."""
    assert trainer.hooks is not None and trainer.module is not None
    step = functools.partial(profiled_step(trainer.hooks.profiler, trainer.strategy.step),
                             "training_step")
    timed = compiling.time_first_call(step, trainer.compile_options is not None,
                                      "training_step")
    return batch_idx_as_taken(timed, trainer.module.training_step, named=False)


class ManualStep:
    """``training_step`` steps its own optimizers (``self.optimizers()``, ``manual_backward``);
    a batch stepped when ``global_step`` moved."""

    def __init__(self, trainer: LoopHost, watch: NonFiniteWatch) -> None:
        self.trainer, self.watch = trainer, watch
        self.losses = 0

    def start_epoch(self, results: Results) -> None:
        self.results = results
        self.training_step = training_step_call(self.trainer)

    def run(self, batch: Any, batch_idx: int, last_of_epoch: bool) -> tuple[Any, bool]:
        """Run the batch; returns ``training_step``'s output and whether an optimizer stepped."""
        trainer = self.trainer
        before = trainer.global_step
        self.results.hook = "training_step"
        output = self.training_step(batch, batch_idx)
        if (loss := loss_of_output(output)) is not None:
            self.losses += 1
            self.watch.record(loss, trainer.current_epoch, before, batch_idx)
        return output, trainer.global_step != before


class AutomaticStep:
    """The Trainer runs zero_grad, backward and the optimizer step around ``training_step``:
    one optimizer, ``accumulate_grad_batches`` batches per step, ``Trainer.skip_backward``
    epochs that only run ``training_step`` (under no_grad)."""

    def __init__(self, trainer: LoopHost, watch: NonFiniteWatch) -> None:
        self.trainer, self.watch = trainer, watch
        #: batches whose training_step returned a loss (None skips a batch)
        self.losses = 0
        self.output: Any = None
        self.batch: Any = None
        self.batch_idx = 0
        self.first = True
        self.ran = False

    def start_epoch(self, results: Results) -> None:
        """Read what may change between epochs (a callback may swap the optimizer or set
        ``skip_backward`` in ``on_train_epoch_start``)."""
        trainer = self.trainer
        module = trainer.module
        assert module is not None
        assert trainer.hooks is not None
        self.results = results
        self.training_step = training_step_call(trainer)
        self.hooks, self.strategy = trainer.hooks, trainer.strategy
        self.backward = trainer.optimization.backward
        #: whether anything implements ``on_before_zero_grad`` (the epoch's callbacks are set)
        self.zero_grad_hook = self.hooks.has("on_before_zero_grad")
        self.optimizer: Any = trainer.optimizers[0] if trainer.optimizers else None
        self.accumulate = trainer.accumulate_grad_batches
        self.first = True  # every batch starts its window when accumulate_grad_batches is 1
        self.forward_only = trainer.skip_backward
        self.after = trainer.optimization.after_closure_for(self.optimizer)
        self.own_step = overridden(module, "optimizer_step")
        self.own_zero = overridden(module, "optimizer_zero_grad")
        self.user_optimizer = trainer.optimization.for_user(True)[0] if self.own_step else None
        self.epoch = trainer.current_epoch

    def run(self, batch: Any, batch_idx: int, last_of_epoch: bool) -> tuple[Any, bool]:
        """Run the batch; returns ``training_step``'s output and whether an optimizer stepped."""
        trainer = self.trainer
        self.batch, self.batch_idx, self.ran, self.output = batch, batch_idx, False, None
        if self.forward_only:  # e.g. SWA's batch-norm epoch: statistics only, nothing optimized
            self.results.hook = "training_step"
            with torch.no_grad():
                return self.training_step(batch, batch_idx), False
        accumulate = self.accumulate
        if accumulate > 1:
            self.first = batch_idx % accumulate == 0
            if not ((batch_idx + 1) % accumulate == 0 or last_of_epoch):
                with self.strategy.no_backward_sync():
                    self.closure()
                return self.output, False
        if self.own_step:
            module = trainer.module
            assert module is not None
            self.results.hook = "optimizer_step"  # self.log there is per step (Lightning)
            module.optimizer_step(self.epoch, batch_idx, self.user_optimizer, self.closure)
        else:
            self.strategy.optimizer_step(self.optimizer, self.closure, self.after)
            trainer.global_step += 1
        if not self.ran:
            raise ConfigurationError(
                "the training step did not run for this batch: "
                + ("your optimizer_step override must call optimizer.step(closure="
                   "optimizer_closure)" if self.own_step else
                   "the optimizer's step(closure) did not call the closure")
                + ". The closure runs training_step, zero_grad and backward")
        return self.output, True

    def closure(self) -> Any:
        """This batch's training_step, zero_grad and backward (what ``optimizer.step`` calls);
        returns the loss (None: the batch is skipped)."""
        self.ran = True
        self.results.hook = "training_step"
        output = self.output = self.training_step(self.batch, self.batch_idx)
        # the usual return, a scalar with a graph, needs no more checking
        loss = output if type(output) is torch.Tensor and not output.is_leaf and \
            output.numel() == 1 else loss_of(output)
        if self.first:
            if self.zero_grad_hook:
                self.hooks("on_before_zero_grad", self.optimizer)
            if self.own_zero:
                module = self.trainer.module
                assert module is not None
                module.optimizer_zero_grad(self.epoch, self.batch_idx, self.optimizer)
            else:
                self.optimizer.zero_grad(set_to_none=True)
        if loss is None:  # skip: no backward, and the zeroed gradients move nothing
            return None
        self.losses += 1
        self.watch.record(loss, self.epoch, self.trainer.global_step, self.batch_idx)
        if self.accumulate > 1:
            loss = loss / self.accumulate
        self.backward(loss)
        return loss


def loss_of(output: Any) -> torch.Tensor | None:
    """The loss in ``training_step``'s output (a tensor, a dict with ``loss``, or None),
    checked: a scalar with a graph."""
    loss = output.get("loss") if isinstance(output, dict) else output
    if isinstance(output, dict) and "loss" not in output:
        raise ConfigurationError(f"training_step returned a dict without 'loss' (keys: "
                                 f"{sorted(output)}); put the loss under 'loss'")
    if loss is None or isinstance(loss, torch.Tensor):
        if loss is not None and loss.numel() != 1:
            raise ConfigurationError(f"training_step returned a loss of shape "
                                     f"{tuple(loss.shape)}; the loss must be a scalar (reduce "
                                     "it, e.g. .mean())")
        if loss is not None and (not loss.requires_grad or loss.grad_fn is None):
            if loss.requires_grad:  # a leaf: backward runs (Lightning trains on), changes nothing
                _LEAF_LOSS.warn("training_step returned a loss that has no grad_fn (a leaf "
                                "tensor, not computed from the model's parameters), so "
                                "backward trains nothing: was it rebuilt with "
                                "torch.tensor(..., requires_grad=True)?", category=RuntimeWarning)
                return loss
            raise ConfigurationError("training_step returned a loss that does not require "
                                     "grad: was it detached, rebuilt with torch.tensor(), or "
                                     "computed under torch.no_grad()?")
        return loss
    raise ConfigurationError(f"training_step returned a {type(loss).__name__}; return the loss "
                             "tensor, a dict with 'loss', or None to skip the batch")
