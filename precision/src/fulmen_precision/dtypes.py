"""Shared by the precision plugins: dtype names and casting of nested batches."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from fulmen import ConfigurationError
from fulmen.apply import apply_to_tensors, is_floating

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}


def to_dtype(value: str | torch.dtype, owner: str) -> torch.dtype:
    if isinstance(value, torch.dtype):
        return value
    if value not in DTYPES:
        raise ConfigurationError(f"{owner}(dtype={value!r}): expected one of {sorted(DTYPES)}")
    return DTYPES[value]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` → ``"bfloat16"``: a dtype as the records' ``init_kwargs`` spell it."""
    return str(dtype).removeprefix("torch.")


def cast_floats(data: Any, dtype: torch.dtype) -> Any:
    """Cast the floating-point tensors of a nested batch; leave ints (labels, indices) alone."""
    return apply_to_tensors(data, lambda t: t.to(dtype), keep=is_floating)


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """Tensors created inside (``torch.zeros(...)`` in a forward) get ``dtype``."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)
