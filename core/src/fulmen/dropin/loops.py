"""The public pieces of Lightning's loop modules (``lightning.pytorch.loops``). fulmen's loops
are its own (:mod:`fulmen.trainer`), so Lightning's loop classes (``_FitLoop``...) have no
counterpart; what their modules export publicly works as in Lightning: the optimizer closures
and their results, ``check_finite_loss``, and the ``RestartStage`` constants each loop module
defines."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import WarningCache

__all__ = ["AbstractClosure", "Closure", "ClosureResult", "EpochRestartStage",
           "EvaluationRestartStage", "FitRestartStage", "ManualResult", "OutputResult",
           "check_finite_loss", "do_nothing_closure"]

T = TypeVar("T")


class FitRestartStage:
    """Where a restarted fit resumed (``lightning.pytorch.loops.fit_loop.RestartStage``)."""

    NONE = "none"
    RESTARTED_ON_EPOCH_START = "restarted_on_epoch_start"
    RESTARTED_MID_EPOCH = "restarted_mid_epoch"
    RESTARTED_ON_EPOCH_END = "restarted_on_epoch_end"
    RESUMED_ON_EPOCH_END = "resumed_on_epoch_end"


class EpochRestartStage:
    """``lightning.pytorch.loops.training_epoch_loop.RestartStage``."""

    NONE = "none"
    RESTARTED_ON_TRAIN_BATCH_END = "restarted_on_train_batch_end"
    RESTARTED_ON_LAST = "restarted_on_last"


class EvaluationRestartStage:
    """``lightning.pytorch.loops.evaluation_loop.RestartStage``."""

    NONE = "none"
    RESTARTED_MID_EVALUATION = "restarted_mid_evaluation"


def do_nothing_closure() -> None:
    """A closure for ``optimizer.step(closure)`` that computes nothing."""
    return None


def check_finite_loss(loss: Any) -> None:
    """A ``ValueError`` when ``loss`` (a tensor, or None) holds NaN or infinity."""
    import torch

    if loss is not None and not torch.isfinite(loss).all():
        raise ValueError(f"The loss returned in `training_step` is {loss}.")


@dataclass
class OutputResult:
    """What one optimization step produced."""

    def asdict(self) -> dict[str, Any]:
        raise NotImplementedError


class AbstractClosure(ABC, Generic[T]):
    """A callable that runs a computation and keeps its result for one reading
    (:meth:`consume_result`)."""

    def __init__(self) -> None:
        super().__init__()
        self._result: T | None = None

    def consume_result(self) -> T:
        """The last result, forgotten once read; an error when the closure has not run."""
        if self._result is None:
            raise ConfigurationError(
                "The closure hasn't been executed. HINT: did you call `optimizer_closure()` in "
                "your `optimizer_step` hook? It could also happen because the "
                "`optimizer.step(optimizer_closure)` call did not execute it internally.")
        result, self._result = self._result, None
        return result

    @abstractmethod
    def closure(self, *args: Any, **kwargs: Any) -> T:
        """The computation."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._result = self.closure(*args, **kwargs)
        return self


@dataclass
class ClosureResult(OutputResult):
    """The result of a :class:`Closure`: ``closure_loss`` (with its graph), ``loss`` (a
    detached copy) and the other keys ``training_step`` returned."""

    closure_loss: Any
    loss: Any = field(init=False, default=None)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.closure_loss is not None:
            self.loss = self.closure_loss.detach().clone()

    @classmethod
    def from_training_step_output(cls, training_step_output: Any,
                                  normalize: int = 1) -> ClosureResult:
        """From what ``training_step`` returned (a tensor, a dict with ``"loss"``, or None);
        the loss is divided by ``normalize`` (the accumulation factor)."""
        import torch

        closure_loss, extra = None, {}
        if isinstance(training_step_output, Mapping):
            closure_loss = training_step_output.get("loss")
            if closure_loss is None:
                raise ConfigurationError("In automatic_optimization, when `training_step` returns "
                                         "a dict, the 'loss' key needs to be present")
            extra = {k: v for k, v in training_step_output.items() if k != "loss"}
        elif isinstance(training_step_output, torch.Tensor):
            closure_loss = training_step_output
        elif training_step_output is not None:
            raise ConfigurationError("In automatic optimization, `training_step` must return a "
                                     "Tensor, a dict, or None (where the step will be skipped).")
        if closure_loss is not None:
            closure_loss = closure_loss / normalize
        return cls(closure_loss, extra=extra)

    def asdict(self) -> dict[str, Any]:
        return {"loss": self.loss, **self.extra}


class Closure(AbstractClosure[ClosureResult]):
    """``training_step`` (``step_fn``), ``zero_grad`` and ``backward`` in one closure for
    ``optimizer.step(closure)``; calling it returns the detached loss."""

    warning_cache = WarningCache()

    def __init__(self, step_fn: Callable[[], ClosureResult],
                 backward_fn: Callable[[Any], None] | None = None,
                 zero_grad_fn: Callable[[], None] | None = None) -> None:
        super().__init__()
        self._step_fn, self._backward_fn, self._zero_grad_fn = step_fn, backward_fn, zero_grad_fn

    def closure(self, *args: Any, **kwargs: Any) -> ClosureResult:
        import torch

        with torch.enable_grad():
            output = self._step_fn()
            if output.closure_loss is None:
                self.warning_cache.warn("`training_step` returned `None`. If this was on "
                                        "purpose, ignore this warning...")
            if self._zero_grad_fn is not None:
                self._zero_grad_fn()
            if self._backward_fn is not None and output.closure_loss is not None:
                self._backward_fn(output.closure_loss)
        return output

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._result = self.closure(*args, **kwargs)
        return self._result.loss


@dataclass
class ManualResult(OutputResult):
    """What ``training_step`` returned under manual optimization (a detached ``"loss"``)."""

    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_training_step_output(cls, training_step_output: Any) -> ManualResult:
        import torch

        extra: dict[str, Any] = {}
        if isinstance(training_step_output, Mapping):
            extra = dict(training_step_output)
        elif isinstance(training_step_output, torch.Tensor):
            extra = {"loss": training_step_output}
        elif training_step_output is not None:
            raise ConfigurationError("In manual optimization, `training_step` must either return "
                                     "a Tensor or have no return.")
        if "loss" in extra:
            extra["loss"] = extra["loss"].detach()
        return cls(extra=extra)

    def asdict(self) -> dict[str, Any]:
        return self.extra
