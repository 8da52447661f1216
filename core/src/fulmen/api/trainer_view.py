"""``TrainerView``: the Trainer as the code it runs sees it — the module (``self.trainer``) and the
parts it drives.

A ``fulmen.Module`` reaches the Trainer only through these documented public members, so the
module (and whatever a module imports) never imports the Trainer class: the Trainer imports the
module, not the other way round. ``fulmen.Trainer`` satisfies this protocol (mypy checks it where
the Trainer attaches itself to the module); so may a test double. Every member is also public on
``fulmen.Trainer`` with the same meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fulmen.api.ranks import Ranks

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from fulmen.api.logger import Logger
    from fulmen.api.strategy import Strategy
    from fulmen.trainer.states import TrainerState


class StepResults(Protocol):
    """Where ``Module.log`` puts a value: the results of the running hook."""

    def log_step_value(self, name: str, value: Any) -> bool:
        """Keep a plain per-step scalar logged again under the same name; False when the
        value needs :meth:`log` (with its checks)."""
        ...

    def log(self, name: str, value: Any, prog_bar: bool, logger: bool, on_step: bool | None,
            on_epoch: bool | None, reduce_fx: Any, sync_dist: bool, rank_zero_only: bool,
            batch_size: int | None, add_dataloader_idx: bool = True) -> None:
        """``Module.log`` with its arguments, positionally."""
        ...


class LoggedMetrics(Protocol):
    """The Trainer's logged metrics (``trainer.metrics``)."""

    @property
    def current(self) -> StepResults | None:
        """The results of the hook that runs now; None outside the Trainer's hooks."""
        ...


class OptimizerAccess(Protocol):
    """The Trainer's optimizers and backward pass (``trainer.optimization``)."""

    def for_user(self, use_wrapper: bool) -> list[Any]:
        """What ``Module.optimizers()`` returns: wrappers that step through the strategy, or the
        optimizers themselves."""
        ...

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """``Module.manual_backward``: backward through the strategy and the precision, with
        the backward hooks."""
        ...


class SchedulerConfig(Protocol):
    """One entry of ``trainer.lr_scheduler_configs``."""

    @property
    def scheduler(self) -> Any:
        ...


class TrainerView(Ranks, Protocol):
    """The public members of ``fulmen.Trainer`` that a ``Module`` uses (``self.trainer``), and
    those Lightning modules commonly read or set."""

    #: set True to stop training at the next batch (after ``min_epochs``/``min_steps``)
    should_stop: bool

    @property
    def strategy(self) -> Strategy:
        """The composed strategy (collectives, gradient clipping, the device mesh)."""
        ...

    @property
    def model(self) -> torch.nn.Module | None:
        """What steps run through: the module as the strategy wrapped it."""
        ...

    @property
    def is_global_zero(self) -> bool:
        ...

    @property
    def current_epoch(self) -> int:
        ...

    @property
    def global_step(self) -> int:
        ...

    @property
    def logger(self) -> Any:
        """The first logger, or None."""
        ...

    @property
    def loggers(self) -> Sequence[Logger]:
        ...

    @property
    def optimizers(self) -> list[Any]:
        """The optimizers of the running fit, as the strategy set them up."""
        ...

    @property
    def lr_scheduler_configs(self) -> Sequence[SchedulerConfig]:
        ...

    @property
    def gradient_clip_val(self) -> int | float | None:
        ...

    @property
    def gradient_clip_algorithm(self) -> str | None:
        ...

    @property
    def max_epochs(self) -> int:
        ...

    @property
    def max_steps(self) -> int:
        ...

    @property
    def datamodule(self) -> Any:
        """The ``fulmen.DataModule`` of the running stage, or None."""
        ...

    @property
    def state(self) -> TrainerState:
        """Where the Trainer is: ``state.fn`` (the method: ``"fit"``, ``"validate"``...),
        ``state.stage`` (the loop inside it: ``"train"``, ``"sanity_check"``, ``"validate"``...)
        and ``state.status``, as Lightning's ``trainer.state``."""
        ...

    @property
    def sanity_checking(self) -> bool:
        """``state.stage`` is the sanity check."""
        ...

    @property
    def validating(self) -> bool:
        """``state.stage`` is validation: ``trainer.validate`` or validation inside fit."""
        ...

    @property
    def testing(self) -> bool:
        ...

    @property
    def predicting(self) -> bool:
        ...

    @property
    def evaluating(self) -> bool:
        """The sanity check, a validation or a test runs."""
        ...

    @property
    def interrupted(self) -> bool:
        """The last fit/validate/test/predict raised (``state.status`` is interrupted)."""
        ...

    @property
    def barebones(self) -> bool:
        """``Trainer(barebones=True)``: logging and the features that cost per step are off."""
        ...

    @property
    def training(self) -> bool:
        """``state.stage`` is training (inside fit; not during its validation)."""
        ...

    @property
    def callback_metrics(self) -> dict[str, torch.Tensor]:
        """The latest logged values, by name (what ``monitor=`` reads)."""
        ...

    @property
    def logged_metrics(self) -> dict[str, Any]:
        ...

    @property
    def default_root_dir(self) -> str:
        ...

    @property
    def log_dir(self) -> str:
        ...

    def save_checkpoint(self, filepath: str | Path, weights_only: bool = False) -> None:
        """Write a checkpoint of the running state (every rank calls it)."""
        ...

    @property
    def metrics(self) -> LoggedMetrics:
        ...

    @property
    def optimization(self) -> OptimizerAccess:
        ...
