"""The one line each corpus script adds: ``report(...)`` prints the run's final numbers in a
form the corpus tests compare exactly (floats by ``float.hex``, weights by a digest of their
bytes). It imports neither Lightning nor fulmen, so it reports the same way under both."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import torch


def _number(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        value = value.item() if value.numel() == 1 else value.double().sum().item()
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, (int, bool, str)) or value is None:
        return value
    raise TypeError(f"report() takes numbers, tensors and strings, not {type(value).__name__}")


def digest(module: torch.nn.Module) -> str:
    """sha256 of every parameter and buffer of ``module``, in registration order."""
    h = hashlib.sha256()
    for tensor in [*module.parameters(), *module.buffers()]:
        local = getattr(tensor, "to_local", None)  # a DTensor: this process's part
        data = (local() if callable(local) else tensor).detach().cpu().contiguous()
        h.update(data.numpy().tobytes() if data.dtype != torch.bfloat16 else data.view(torch.int16).numpy().tobytes())
    return h.hexdigest()[:16]


def report(trainer: Any = None, model: torch.nn.Module | None = None, rank: int | None = None,
           **values: Any) -> None:
    """Print ``CORPUS <rank> {...}``: the trainer's step, epoch and callback metrics, the model's
    weight digest and any ``values`` given."""
    out: dict[str, Any] = {}
    if trainer is not None:
        out["global_step"] = trainer.global_step
        out["current_epoch"] = trainer.current_epoch
        out.update({f"metric/{k}": _number(v) for k, v in sorted(trainer.callback_metrics.items())})
    if model is not None:
        out["weights"] = digest(model)
    out.update({k: _number(v) for k, v in values.items()})
    if trainer is not None:
        rank = trainer.global_rank
    rank = rank if rank is not None else os.environ.get("RANK", "0")
    # one write per line: the ranks of a job share the pipe
    sys.stdout.write(f"CORPUS {rank} {json.dumps(out, sort_keys=True)}\n")
    sys.stdout.flush()
