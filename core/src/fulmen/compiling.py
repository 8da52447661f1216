"""``torch.compile`` for Trainer and Lite: ``compile=True`` or a dict of ``torch.compile`` keyword
arguments, or a model the user compiled already.

The module is compiled in place (``nn.Module.compile``) after the strategy has set it up, so
parameter names and checkpoint keys never carry ``_orig_mod.``: a compiled model's checkpoint
loads into an uncompiled one and the other way round. A model given as ``torch.compile(model)``
is unwrapped and compiled the same way after set-up.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
import time
from typing import Any

from fulmen.errors import ConfigurationError

log = logging.getLogger("fulmen")


def options(owner: str, value: Any) -> dict[str, Any] | None:
    """``compile=``: None/False (off), True (torch's defaults) or a dict of keyword arguments."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        import inspect

        import torch

        accepted = set(inspect.signature(torch.compile).parameters) - {"model"}
        unknown = sorted(set(value) - accepted)
        if unknown:
            raise ConfigurationError(f"{owner}(compile={value!r}): torch.compile takes no "
                                     f"{', '.join(unknown)}; it takes "
                                     f"{', '.join(sorted(accepted))}")
        return dict(value)
    raise ConfigurationError(f"{owner}(compile={value!r}): use True, False, or a dict of "
                             "torch.compile keyword arguments such as {'mode': 'max-autotune'}")


_CXX = ("g++", "c++", "clang++")


def check_backend(owner: str, settings: dict[str, Any] | None, device_type: str) -> None:
    """Refuse, before any process starts, a ``torch.compile`` backend that cannot work here:
    ``"inductor"`` (the default) needs a C++ compiler for the CPU and triton for GPUs."""
    if settings is None:
        return
    backend = settings.get("backend", "inductor")
    if backend != "inductor":
        return
    if device_type == "cpu" and not (os.environ.get("CXX") or any(map(shutil.which, _CXX))):
        missing = f"a C++ compiler (none of $CXX, {', '.join(_CXX)} was found on PATH)"
    elif device_type == "cuda" and importlib.util.find_spec("triton") is None:
        missing = "triton (not installed)"
    else:
        return
    raise ConfigurationError(
        f"{owner}(compile={settings or True!r}): torch.compile's default backend 'inductor' "
        f"needs {missing} on {device_type!r} devices. Install it, choose a backend that needs "
        "none (compile={'backend': 'aot_eager'}), or train without compiling: compile=False")


def unwrap(model: Any) -> tuple[Any, dict[str, Any] | None]:
    """A model from ``torch.compile(model)``: the original module, and options to compile it
    again after set-up (torch's defaults); anything else: itself and None.

    ``torch._dynamo`` takes seconds to import, so it is not imported here: a compiled model can
    exist only once it has been imported (by ``torch.compile``)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    if eval_frame is not None and isinstance(model, eval_frame.OptimizedModule):
        return model._orig_mod, {}
    return model, None


#: The step methods the Trainer compiles with the module, as Lightning does for a model given as
#: ``torch.compile(model)`` (``lightning.pytorch.utilities.compile.from_compiled``): the loss a
#: ``training_step`` computes is then compiled with the forward (one graph, fused), not left eager.
STEP_METHODS = ("training_step", "validation_step", "test_step", "predict_step")


def apply(module: Any, settings: dict[str, Any] | None, steps: bool = False) -> None:
    """Compile ``module`` in place (its ``__call__``) and, with ``steps``, its step methods (as
    instance attributes: the class and the state dict keys stay as they are); nothing when
    ``settings`` is None. A step method set to None (validation disabled) stays None."""
    if settings is None:
        return
    module.compile(**settings)
    if steps:
        import torch

        for name in STEP_METHODS:
            method = getattr(module, name)
            if method is not None:
                setattr(module, name, torch.compile(method, **settings))


def time_first_call(step: Any, active: bool, what: str = "step") -> Any:
    """``step``, logging how long its first call (``what``) took, mostly compilation, when
    ``active``."""
    if not active:
        return step
    pending = [True]

    def timed(*args: Any, **kwargs: Any) -> Any:
        if not pending:
            return step(*args, **kwargs)
        start = time.perf_counter()
        out = step(*args, **kwargs)
        pending.clear()
        log.info("torch.compile: the first %s took %.1f s (compilation included)", what,
                 time.perf_counter() - start)
        return out

    return timed
