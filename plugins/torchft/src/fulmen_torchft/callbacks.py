"""Callbacks for the Trainer under torchft.

``StopAtCommittedSteps`` ends a fit when the *job* has committed a number of steps:
``max_steps`` counts the steps this process ran, as for every strategy. Under torchft a group
that rejoined mid-run continues the job's step count (it healed from a peer), so its own count
lags the others'; stopping on the job's count (torchft's, the same in every group of the
quorum) makes every group end after the same step, on the same weights.
"""

from __future__ import annotations

from typing import Any

from fulmen import Callback, ConfigurationError


def _torchft_strategy(trainer: Any, who: str, instead: str) -> Any:
    from fulmen_torchft.strategy import TorchFTStrategy

    if not isinstance(trainer.strategy, TorchFTStrategy):
        raise ConfigurationError(
            f"{who} works with torchft's replica groups, but the Trainer runs strategy "
            f"{trainer.strategy.name!r}; use strategy='torchft', or {instead}")
    return trainer.strategy


class StopAtCommittedSteps(Callback):
    """Sets ``trainer.should_stop`` once ``strategy.committed_steps >= steps`` (checked after
    every training batch, as ``max_steps`` is)."""

    def __init__(self, steps: int) -> None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigurationError(f"StopAtCommittedSteps(steps={steps!r}): give the number "
                                     "of committed steps to stop at, a whole number >= 1")
        self.steps = steps

    def target(self) -> int:
        """The committed steps to stop at (override to decide while training)."""
        return self.steps

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        _torchft_strategy(trainer, "StopAtCommittedSteps (torchft's committed steps)",
                          "max_steps")

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.strategy.committed_steps >= self.target():
            trainer.should_stop = True


class ReplicaSchedulers(Callback):
    """Registers every LR scheduler of the fit (``trainer.lr_scheduler_configs``) as replica
    state (``TorchFTStrategy.register_replica_state``), so that a group that heals from a peer
    takes the peer's scheduler state with its weights."""

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        _torchft_strategy(trainer, "ReplicaSchedulers", "leave it out")

    def on_train_start(self, trainer: Any, module: Any) -> None:
        strategy = trainer.strategy
        for index, config in enumerate(trainer.lr_scheduler_configs):
            scheduler = config.scheduler
            strategy.register_replica_state(f"lr_scheduler_{index}", scheduler.state_dict,
                                            scheduler.load_state_dict)
