"""Where the Trainer is: ``trainer.state``, Lightning's ``lightning.pytorch.trainer.states``.

``state.fn`` is the Trainer method running (:class:`TrainerFn`), ``state.stage`` the loop
running inside it (:class:`RunningStage`: inside ``fit``, the sanity check, training and
validation take turns), ``state.status`` whether it runs, finished or was interrupted
(:class:`TrainerStatus`). The enums are Lightning's ``LightningEnum`` (lightning_utilities'
``StrEnum``): each member compares equal to its value, case-insensitively
(``TrainerFn.FITTING == "fit"``), and hashes like it, so it can key a dict of strings.
``trainer.training``/``validating``/``testing``/``predicting``/``sanity_checking`` read and
set ``state.stage``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lightning_utilities.core.enums import StrEnum as LightningEnum


class TrainerStatus(LightningEnum):
    """Whether the Trainer is being created, runs a method, finished it, or was interrupted."""

    INITIALIZING = "initializing"
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"

    @property
    def stopped(self) -> bool:
        return self in (self.FINISHED, self.INTERRUPTED)


class TrainerFn(LightningEnum):
    """The Trainer method that runs: ``fit``, ``validate``, ``test`` or ``predict``."""

    FITTING = "fit"
    VALIDATING = "validate"
    TESTING = "test"
    PREDICTING = "predict"


class RunningStage(LightningEnum):
    """The loop that runs inside a :class:`TrainerFn`:

    - ``TrainerFn.FITTING``: ``SANITY_CHECKING``, ``TRAINING``, ``VALIDATING``
    - ``TrainerFn.VALIDATING``: ``VALIDATING``
    - ``TrainerFn.TESTING``: ``TESTING``
    - ``TrainerFn.PREDICTING``: ``PREDICTING``
    """

    TRAINING = "train"
    SANITY_CHECKING = "sanity_check"
    VALIDATING = "validate"
    TESTING = "test"
    PREDICTING = "predict"

    @property
    def evaluating(self) -> bool:
        """The sanity check, validation or test."""
        return self in (self.VALIDATING, self.TESTING, self.SANITY_CHECKING)

    @property
    def dataloader_prefix(self) -> str | None:
        """The prefix of the stage's dataloader method and flags (``val`` for validation and
        the sanity check: ``val_dataloader``, ``limit_val_batches``)."""
        if self in (self.VALIDATING, self.SANITY_CHECKING):
            return "val"
        return str(self.value)


@dataclass
class TrainerState:
    """``trainer.state``: the method, the loop inside it and the status."""

    status: TrainerStatus = TrainerStatus.INITIALIZING
    fn: TrainerFn | None = None
    stage: RunningStage | None = None

    @property
    def finished(self) -> bool:
        return self.status == TrainerStatus.FINISHED

    @property
    def stopped(self) -> bool:
        return self.status.stopped


#: the stage each Trainer method starts in
STAGE_OF = {TrainerFn.FITTING: RunningStage.TRAINING, TrainerFn.VALIDATING:
            RunningStage.VALIDATING, TrainerFn.TESTING: RunningStage.TESTING,
            TrainerFn.PREDICTING: RunningStage.PREDICTING}
