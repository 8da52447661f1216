"""Lightning's ``convert_to_tensors`` / ``convert_tensors_to_scalars``
(``lightning.fabric.utilities.apply_func``): numbers in a collection to tensors on a device,
and one-element tensors back to Python numbers."""

from __future__ import annotations

from typing import Any

from fulmen.utilities.apply_func import apply_to_collection, move_data_to_device

__all__ = ["convert_tensors_to_scalars", "convert_to_tensors"]


def convert_to_tensors(data: Any, device: Any) -> Any:
    """``data`` with bools (as uint8, which NCCL reduces), ints, floats and numpy arrays made
    tensors, and every tensor moved to ``device``."""
    import numpy as np
    import torch

    conversions: list[tuple[type, Any]] = [
        (bool, lambda v: torch.tensor(v, dtype=torch.uint8, device=device)),
        (int, lambda v: torch.tensor(v, dtype=torch.int, device=device)),
        (float, lambda v: torch.tensor(v, dtype=torch.float, device=device)),
        (np.ndarray, lambda v: torch.from_numpy(v).to(device))]
    for dtype, convert in conversions:
        data = apply_to_collection(data, dtype, convert)
    return move_data_to_device(data, device)


def convert_tensors_to_scalars(data: Any) -> Any:
    """``data`` with every tensor replaced by its ``.item()``; a tensor of more than one element
    is a ``ValueError``."""
    import torch

    def to_item(value: torch.Tensor) -> int | float | bool:
        if value.numel() != 1:
            raise ValueError(f"The metric `{value}` does not contain a single element, thus it "
                             "cannot be converted to a scalar.")
        return value.item()

    return apply_to_collection(data, torch.Tensor, to_item)
