"""Small private helpers of Lightning that libraries call: ``_runif_reasons`` (litgpt's and
Lightning's ``RunIf`` test marker), ``_materialize_meta_tensors`` (litgpt's sequential
generation), ``_distributed_is_initialized``, ``_register_classes`` and
``_load_external_callbacks`` (nequip registers its accelerator through them). Same behaviour
as Lightning 2.6, on fulmen's accelerators and registries."""

from __future__ import annotations

import itertools
import logging
import operator
import os
import sys
from importlib.metadata import entry_points
from inspect import getmembers, isclass
from types import ModuleType
from typing import Any

from lightning_utilities.core.imports import compare_version

__all__ = ["distributed_is_initialized", "has_meta_device_parameters_or_buffers",
           "load_external_callbacks", "materialize", "materialize_meta_tensors",
           "register_classes", "runif_reasons"]

_log = logging.getLogger(__name__)


def runif_reasons(*, min_cuda_gpus: int = 0, min_torch: str | None = None,
                  max_torch: str | None = None, min_python: str | None = None,
                  bf16_cuda: bool = False, tpu: bool = False, mps: bool | None = None,
                  skip_windows: bool = False, standalone: bool = False,
                  deepspeed: bool = False, dynamo: bool = False, linux_only: bool = False,
                  **libraries: bool) -> tuple[list[str], dict[str, bool]]:
    """Why a test marked ``RunIf(...)`` cannot run here (empty: it can), and the marker
    arguments Lightning's conftest reads. ``sklearn=True``, ``rich=True``... (Lightning's
    ``lightning.pytorch`` variant) require that library."""
    import torch
    from packaging.version import Version

    from fulmen_accelerators import CUDAAccelerator, MPSAccelerator

    reasons: list[str] = []
    kwargs: dict[str, bool] = {}
    if min_cuda_gpus:
        if CUDAAccelerator.auto_device_count() < min_cuda_gpus:
            reasons.append(f"GPUs>={min_cuda_gpus}")
        kwargs["min_cuda_gpus"] = True
    if min_torch and compare_version("torch", operator.lt, min_torch, use_base_version=True):
        reasons.append(f"torch>={min_torch}, {torch.__version__} installed")
    if max_torch and compare_version("torch", operator.ge, max_torch, use_base_version=True):
        reasons.append(f"torch<{max_torch}, {torch.__version__} installed")
    if min_python and Version(".".join(map(str, sys.version_info[:3]))) < Version(min_python):
        reasons.append(f"python>={min_python}")
    if bf16_cuda and not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()):
        reasons.append("CUDA device bf16")
    if skip_windows and sys.platform == "win32":
        reasons.append("unimplemented on Windows")
    if tpu:
        reasons.append("TPU")  # fulmen drives no TPUs
        kwargs["tpu"] = True
    if mps is not None:
        if mps and not MPSAccelerator.is_available():
            reasons.append("MPS")
        elif not mps and MPSAccelerator.is_available():
            reasons.append("not MPS")
    if standalone:
        if os.getenv("PL_RUN_STANDALONE_TESTS", "0") != "1":
            reasons.append("Standalone execution")
        kwargs["standalone"] = True
    if deepspeed and not compare_version("deepspeed", operator.ge, "0.0"):
        reasons.append("Deepspeed")
    if dynamo:
        from torch._dynamo.eval_frame import is_dynamo_supported

        if not is_dynamo_supported():
            reasons.append("torch.dynamo")
    if linux_only and sys.platform != "linux":
        reasons.append("only linux")
    import importlib.util

    for library, wanted in libraries.items():
        if wanted and importlib.util.find_spec(library) is None:
            reasons.append(library)
    return reasons, kwargs


def materialize(module: Any, device: Any) -> None:
    """Allocate ``module``'s own meta tensors on ``device`` and ``reset_parameters()`` it."""
    module.to_empty(device=device, recurse=False)
    reset = getattr(module, "reset_parameters", None)
    if reset is None:
        raise TypeError(
            f"Materialization requires that the `{type(module).__name__}.reset_parameters` "
            "method is implemented. This method is used to initialize any children parameters "
            "or buffers in this module.")
    if callable(reset):
        reset()


def materialize_meta_tensors(module: Any, device: Any) -> None:
    """:func:`materialize` every submodule that has meta parameters or buffers of its own."""
    for sub in module.modules():
        if has_meta_device_parameters_or_buffers(sub, recurse=False):
            materialize(sub, device)


def has_meta_device_parameters_or_buffers(obj: Any, recurse: bool = True) -> bool:
    """Whether a module (or an optimizer's parameters) holds tensors on the meta device."""
    import torch

    if isinstance(obj, torch.optim.Optimizer):
        return any(t.is_meta for group in obj.param_groups for t in group["params"]
                   if isinstance(t, torch.nn.Parameter))
    if isinstance(obj, torch.nn.Module):
        return any(t.is_meta for t in itertools.chain(obj.parameters(recurse=recurse),
                                                      obj.buffers(recurse=recurse)))
    raise TypeError(f"Expected `torch.nn.Module` or `torch.optim.Optimizer`, got: "
                    f"{type(obj).__name__}")


def distributed_is_initialized() -> bool:
    """Whether ``torch.distributed`` is available and its default group initialized."""
    import torch.distributed

    return torch.distributed.is_available() and torch.distributed.is_initialized()


def register_classes(registry: Any, method: str, module: ModuleType, parent: type) -> None:
    """Call ``cls.<method>(registry)`` for each ``parent`` subclass of ``module`` that
    overrides it (how Lightning's accelerators and strategies add their names)."""
    for _, member in getmembers(module, isclass):
        # defined below ``parent`` (fulmen's base classes need not define ``method`` at all)
        if issubclass(member, parent) and any(method in vars(k) for k in member.__mro__
                                              if k not in parent.__mro__):
            getattr(member, method)(registry)


def load_external_callbacks(group: str) -> list[Any]:
    """The callbacks the entry points of ``group`` return (each a factory of a callback or a
    list of them)."""
    out: list[Any] = []
    for factory in entry_points(group=group):
        made = factory.load()()
        made = made if isinstance(made, list) else [made]
        if made:
            _log.info(f"Adding {len(made)} callbacks from entry point '{factory.name}': "
                      f"{', '.join(type(cb).__name__ for cb in made)}")
        out.extend(made)
    return out
