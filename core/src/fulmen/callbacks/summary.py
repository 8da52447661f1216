"""``ModelSummary``: the module's layers, parameter counts and size, printed at fit start."""

from __future__ import annotations

from typing import Any

import torch

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.status import configure_logging


def summarize(module: torch.nn.Module, max_depth: int = 1) -> dict[str, Any]:
    """Rows (name, type, params) up to ``max_depth`` and the totals."""
    rows = []
    for name, child in module.named_modules():
        depth = name.count(".") + 1 if name else 0
        if 0 < depth <= max_depth:
            rows.append((name, type(child).__name__, sum(p.numel() for p in child.parameters())))
    params = list(module.parameters())
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    size = sum(p.numel() * p.element_size() for p in params) + sum(
        b.numel() * b.element_size() for b in module.buffers())
    return {"rows": rows, "total": total, "trainable": trainable,
            "non_trainable": total - trainable, "size_mb": size / 1e6}


def _human(n: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return str(n)


def format_summary(info: dict[str, Any]) -> str:
    rows = [("", "Name", "Type", "Params")] + [
        (str(i), name, kind, _human(n)) for i, (name, kind, n) in enumerate(info["rows"])]
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows]
    rule = "-" * max(len(line) for line in lines)
    lines.insert(1, rule)
    lines += [rule, f"{_human(info['trainable'])}  Trainable params",
              f"{_human(info['non_trainable'])}  Non-trainable params",
              f"{_human(info['total'])}  Total params",
              f"{info['size_mb']:.3f}  Total estimated model params size (MB)"]
    return "\n".join(lines)


class ModelSummary(Callback):
    """Prints the summary on rank zero when ``fit`` starts."""

    def __init__(self, max_depth: int = 1) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < -1:
            raise ConfigurationError(f"ModelSummary(max_depth={max_depth!r}): use an int >= -1 "
                                     "(how deep to list submodules)")
        self.max_depth = max_depth

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if trainer.is_global_zero and self.max_depth >= 0:
            configure_logging().info("%s", format_summary(summarize(module, self.max_depth)))
