"""float64: parameters, floating inputs and tensors created in forward are double."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from fulmen import Precision
from fulmen_precision.dtypes import cast_floats, default_dtype
from fulmen_precision.fp64 import SPEC


class Precision64(Precision):
    """Double precision, for numerically sensitive work."""

    name = SPEC.name  # the registered name, from the plugin's record

    @property
    def param_dtype(self) -> torch.dtype:
        return torch.float64

    @property
    def compute_dtype(self) -> torch.dtype:
        return torch.float64

    def convert_module(self, module: torch.nn.Module) -> torch.nn.Module:
        return module.double()

    def convert_input(self, data: Any) -> Any:
        return cast_floats(data, torch.float64)

    @contextlib.contextmanager
    def forward_context(self) -> Iterator[None]:
        with default_dtype(torch.float64):
            yield

    def module_init_context(self) -> contextlib.AbstractContextManager[None]:
        return default_dtype(torch.float64)
