"""Lightning's ``grad_norm``: the p-norm of each parameter's gradient and of all together
(log it from ``on_before_optimizer_step``)."""

from __future__ import annotations

from typing import Any

__all__ = ["grad_norm"]


def grad_norm(module: Any, norm_type: float | int | str,
              group_separator: str = "/") -> dict[str, Any]:
    """``{"grad_2.0_norm/<param>": norm, ..., "grad_2.0_norm_total": norm}`` over the
    parameters that have a gradient; ``norm_type`` may be ``"inf"``."""
    import torch

    norm_type = float(norm_type)
    if norm_type <= 0:
        raise ValueError("`norm_type` must be a positive number or 'inf' (infinity norm). "
                         f"Got {norm_type}")
    norms = {f"grad_{norm_type}_norm{group_separator}{name}": p.grad.detach().norm(norm_type)
             for name, p in module.named_parameters() if p.grad is not None}
    if norms:
        norms[f"grad_{norm_type}_norm_total"] = torch.stack(list(norms.values())).norm(norm_type)
    return norms
