"""``RunConfig``: the run flags the Trainer or Lite hands the strategy it runs.

Some strategies must know how the loop around them behaves (DeepSpeed writes gradient
accumulation and clipping into its engine config). They read ``strategy.run_config``; nothing
else of the Trainer or Lite is a contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class RunConfig:
    """Set on ``strategy.run_config`` by the Trainer before it sets the module up; Lite leaves
    the default (its loop is the user's: the flags are None, meaning "not said").

    owner: who runs the strategy, ``"Trainer"`` or ``"Lite"`` (for error messages).
    accumulate_grad_batches: batches whose gradients are summed before one optimizer step.
    gradient_clip_val: clip threshold (None or 0: no clipping).
    gradient_clip_algorithm: ``"norm"`` or ``"value"``.
    """

    owner: Literal["Trainer", "Lite"] = "Lite"
    accumulate_grad_batches: int | None = None
    gradient_clip_val: float | None = None
    gradient_clip_algorithm: str = "norm"
