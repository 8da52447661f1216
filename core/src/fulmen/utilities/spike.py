"""Lightning's loss-spike detection (``lightning.fabric.utilities.spike``): stop training with
:class:`TrainingSpikeException` when the loss jumps away from its running mean, after writing
the current and the previous batch index to ``skip_batches.json`` so a resumed run can skip
them. Use it from a Lite/Fabric loop (``lite.call("on_train_batch_end", lite, loss, batch, i)``
with it among the callbacks) or, as :class:`fulmen.callbacks.spike.SpikeDetection`, in the
Trainer."""

from __future__ import annotations

import json
import os
from collections import deque
from pathlib import Path
from typing import Any, Literal

from fulmen.errors import FulmenError

__all__ = ["SpikeDetection", "TrainingSpikeException"]


class TrainingSpikeException(FulmenError, RuntimeError):
    """A loss spike was detected; the message names the batch."""

    def __init__(self, batch_idx: int, *args: Any) -> None:
        super().__init__(f"Training spike detected in batch {batch_idx}", *args)


class SpikeDetection:
    """Stop on a loss spike (Lightning's arguments).

    Args:
        mode: ``"min"`` (a rise is bad) or ``"max"`` (a fall is bad).
        window: how many past losses the running mean covers.
        warmup: the first batch index that is checked.
        atol / rtol: a spike differs from the running mean by at least ``atol`` and by at least
            ``rtol`` times the mean (None: that test passes).
        exclude_batches_path: folder (or ``.json`` file) for the batches to skip; the working
            directory by default (the Trainer's ``default_root_dir`` for the callback).
        finite_only: a NaN or infinite loss is a spike; with False it is ignored instead.
    """

    def __init__(self, mode: Literal["min", "max"] = "min", window: int = 10, warmup: int = 1,
                 atol: float | None = None, rtol: float | None = 2.0,
                 exclude_batches_path: str | Path | None = None,
                 finite_only: bool = True) -> None:
        super().__init__()
        if mode not in ("min", "max"):
            raise ValueError(f"Invalid mode. Has to be min or max, found {mode}")
        self.last_val: Any = 0.0
        self.running: deque[float] = deque(maxlen=window)
        self.mode, self.warmup, self.atol, self.rtol = mode, warmup, atol, rtol
        self.bad_batches: list[int] = []
        self.exclude_batches_path = exclude_batches_path
        self.finite_only = finite_only

    def on_train_batch_end(self, fabric: Any, loss: Any, batch: Any, batch_idx: int) -> None:
        """Check ``loss`` (every process checks its own; all stop when one finds a spike)."""
        import torch

        with torch.no_grad():
            loss = loss.detach() if isinstance(loss, torch.Tensor) else torch.tensor(loss)
            if self.exclude_batches_path is None:
                self.exclude_batches_path = os.getcwd()
            if not str(self.exclude_batches_path).endswith(".json"):
                self.exclude_batches_path = os.path.join(self.exclude_batches_path,
                                                         "skip_batches.json")
            is_spike = bool(batch_idx >= self.warmup and self._is_spike(loss))
            fabric.strategy.barrier()
            if fabric.strategy.reduce_boolean_decision(is_spike, all=False):
                self._handle_spike(fabric, batch_idx)
            elif self.finite_only or fabric.strategy.reduce_boolean_decision(
                    bool(torch.isfinite(loss).all()), all=True):
                self.running.append(float(loss.float().mean()))
                self.last_val = loss

    def _is_spike(self, loss: Any) -> bool:
        import torch

        if self.finite_only and not bool(torch.isfinite(loss).all()):
            return True
        difference = loss - self.last_val
        if self._is_better(difference):
            return False
        mean = sum(self.running) / len(self.running) if self.running else 0.0
        return self._check_atol(loss, mean) and self._check_rtol(loss, mean)

    def _handle_spike(self, fabric: Any, batch_idx: int) -> None:
        # the previous batch may have corrupted the weights, this one's data may be bad
        self.bad_batches.extend([batch_idx - 1, batch_idx])
        if fabric.global_rank == 0:
            path = str(self.exclude_batches_path)
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w") as handle:
                json.dump(self.bad_batches, handle, indent=4)
        raise TrainingSpikeException(batch_idx=batch_idx)

    def _check_atol(self, a: Any, b: Any) -> bool:
        return self.atol is None or bool(abs(a - b) >= abs(self.atol))

    def _check_rtol(self, a: Any, b: Any) -> bool:
        return self.rtol is None or bool(abs(a - b) >= abs(self.rtol * b))

    def _is_better(self, difference: Any) -> bool:
        if self.mode == "min":
            return bool((difference <= 0.0).all())
        return bool((difference >= 0.0).all())

    def state_dict(self) -> dict[str, Any]:
        last = self.last_val
        return {"last_val": _number(last), "mode": self.mode,
                "warmup": self.warmup, "atol": self.atol, "rtol": self.rtol,
                "bad_batches": self.bad_batches, "bad_batches_path": self.exclude_batches_path,
                "running": list(self.running), "window": self.running.maxlen}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        self.last_val = state.pop("last_val")
        self.mode, self.warmup = state.pop("mode"), state.pop("warmup")
        self.atol, self.rtol = state.pop("atol"), state.pop("rtol")
        self.bad_batches = state.pop("bad_batches")
        self.exclude_batches_path = state.pop("bad_batches_path")
        self.running = deque(state.pop("running"), maxlen=state.pop("window", None))


def _number(value: Any) -> Any:
    """A tensor's number (``state_dict`` holds plain values); anything else as it is."""
    import torch

    return value.item() if isinstance(value, torch.Tensor) else value
