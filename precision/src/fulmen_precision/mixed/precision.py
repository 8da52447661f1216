"""Automatic mixed precision: ``torch.autocast`` around forward, ``GradScaler`` for float16."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fulmen import Precision
from fulmen.api.naming import name_for
from fulmen_precision.dtypes import cast_floats, dtype_name, to_dtype
from fulmen_precision.mixed import RECORDS


class MixedPrecision(Precision):
    """Weights stay float32; ops run in ``dtype`` where autocast allows.

    float16 scales the loss with ``torch.amp.GradScaler`` (steps whose gradients overflow are
    skipped); bfloat16 has float32's range and needs no scaling.
    """

    def __init__(self, dtype: str | torch.dtype = "bfloat16",
                 scaler: torch.amp.GradScaler | None = None) -> None:
        self.dtype = to_dtype(dtype, "MixedPrecision")
        self.name = name_for(RECORDS, {"dtype": dtype_name(self.dtype)}) or self.name
        self.scaler = scaler
        self._unscaled: set[int] = set()

    @property
    def compute_dtype(self) -> torch.dtype:
        return self.dtype

    @property
    def reduce_dtype(self) -> torch.dtype:
        return torch.float32  # the gradients of float32 weights

    def connect(self, device_type: str) -> None:
        super().connect(device_type)
        if self.dtype == torch.float16 and self.scaler is None:
            self.scaler = torch.amp.GradScaler(device_type)

    @contextlib.contextmanager
    def forward_context(self) -> Iterator[None]:
        with torch.autocast(self.device_type, dtype=self.dtype):
            yield

    def convert_output(self, data: Any) -> Any:
        return cast_floats(data, torch.get_default_dtype())

    def backward(self, tensor: torch.Tensor, *args: Any,
                 run_backward: Callable[..., None] | None = None, **kwargs: Any) -> None:
        if self.scaler is not None:
            tensor = self.scaler.scale(tensor)
        super().backward(tensor, *args, run_backward=run_backward, **kwargs)

    def unscale_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        # Unscaling twice would corrupt the gradients (GradScaler refuses it): once per update.
        if self.scaler is not None and id(optimizer) not in self._unscaled:
            self.scaler.unscale_(optimizer)
            self._unscaled.add(id(optimizer))

    def optimizer_step(self, optimizer: torch.optim.Optimizer,
                       closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        if self.scaler is None:
            return super().optimizer_step(optimizer, closure, after_closure)
        result = closure() if closure is not None else None
        self.unscale_gradients(optimizer)  # hooks and clipping see true gradients
        if after_closure is not None:
            after_closure()
        self.scaler.step(optimizer)  # skipped when the gradients hold inf/nan
        self.scaler.update()
        self._unscaled.clear()
        return result

    def state_dict(self) -> dict[str, Any]:
        return {"scaler": self.scaler.state_dict()} if self.scaler is not None else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.scaler is not None and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])
