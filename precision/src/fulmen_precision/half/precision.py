"""Parameters, floating inputs and created tensors in float16 or bfloat16."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from fulmen import Precision
from fulmen.api.naming import name_for
from fulmen_precision.dtypes import cast_floats, default_dtype, dtype_name, to_dtype
from fulmen_precision.half import RECORDS


class HalfPrecision(Precision):
    """``16-true`` (float16) or ``bf16-true`` (bfloat16): everything in the half dtype."""

    def __init__(self, dtype: str | torch.dtype = "bfloat16") -> None:
        self.dtype = to_dtype(dtype, "HalfPrecision")
        self.name = name_for(RECORDS, {"dtype": dtype_name(self.dtype)}) or self.name

    @property
    def param_dtype(self) -> torch.dtype:
        return self.dtype

    @property
    def compute_dtype(self) -> torch.dtype:
        return self.dtype

    @property
    def reduce_dtype(self) -> torch.dtype:
        return self.dtype

    def convert_module(self, module: torch.nn.Module) -> torch.nn.Module:
        return module.to(dtype=self.dtype)

    def convert_input(self, data: Any) -> Any:
        return cast_floats(data, self.dtype)

    def convert_output(self, data: Any) -> Any:
        return cast_floats(data, torch.get_default_dtype())

    @contextlib.contextmanager
    def forward_context(self) -> Iterator[None]:
        with default_dtype(self.dtype):
            yield

    def module_init_context(self) -> contextlib.AbstractContextManager[None]:
        return default_dtype(self.dtype)
