"""Apply a function to every leaf of a nested collection; move a batch to a device."""

from __future__ import annotations

from typing import Any

import torch
from lightning_utilities.core.apply_func import apply_to_collection, apply_to_collections

__all__ = ["apply_to_collection", "apply_to_collections", "move_data_to_device"]


def move_data_to_device(batch: Any, device: torch.device | str | int) -> Any:
    """``batch`` with every tensor and module moved to ``device`` (an int is a CUDA index),
    through lists, tuples, dicts, namedtuples and dataclasses. Copies to CUDA are
    non-blocking."""
    if isinstance(device, str):
        device = torch.device(device)
    elif isinstance(device, int):
        device = torch.device("cuda", device)

    def move(data: Any) -> Any:
        if isinstance(data, torch.Tensor):
            return data.to(device, non_blocking=device.type == "cuda")
        return data.to(device)

    return apply_to_collection(batch, dtype=(torch.Tensor, torch.nn.Module), function=move)
