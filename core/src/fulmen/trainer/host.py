"""``TrainerHost``: what the Trainer's parts read from the Trainer that owns them.

The parts — ``Metrics`` (``trainer.metrics``), ``Optimization`` (``trainer.optimization``), the
preemption handler and lost-work ledger, batch transfer and scheduler stepping — are created by
the Trainer and keep a reference to it. They are typed against this protocol, not against the
``Trainer`` class, so that the Trainer imports them and never the other way round (no import
cycle, annotations included). The loops read more (:class:`fulmen.trainer.loop_host.LoopHost`).
Every member is a public member of ``fulmen.Trainer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fulmen.api.trainer_view import TrainerView

if TYPE_CHECKING:
    from fulmen.api.environment import ClusterEnvironment
    from fulmen.api.notice import PreemptionNotice
    from fulmen.datamodule import DataModule
    from fulmen.loggers.dispatch import LoggerSet
    from fulmen.module import Module
    from fulmen.trainer.hooks import HookTable
    from fulmen.trainer.optim import LRSchedulerConfig
    from fulmen.trainer.progress import RunState
    from fulmen.trainer.states import TrainerState


class TrainerHost(TrainerView, Protocol):
    """The Trainer as its parts see it: :class:`~fulmen.api.trainer_view.TrainerView` and the
    run state, flags and plugins below."""

    #: the module of the running stage (None before the first)
    module: Module | None
    datamodule: DataModule | None
    #: ``trainer.hooks(name, *args)``: the running stage's callback and module hooks
    hooks: HookTable | None
    #: where the running stage is (progress counters, what the loops keep between calls)
    run_state: RunState
    logger_set: LoggerSet
    current_epoch: int
    global_step: int
    #: the method running (``state.fn``), the loop inside it (``state.stage``), the status
    state: TrainerState
    inference_mode: bool
    #: the checkpoint the last stage restored from
    ckpt_path: str | None

    @property
    def cluster_environment(self) -> ClusterEnvironment:
        ...

    @property
    def preemption_notices(self) -> tuple[PreemptionNotice, ...]:
        ...

    @property
    def batches_that_stepped(self) -> int:
        ...

    @property
    def lr_scheduler_configs(self) -> list[LRSchedulerConfig]:
        ...

    def log_to_loggers(self, metrics: dict[str, Any], step: int | None = None) -> None:
        ...
