"""``DDPStrategy``: torch DistributedDataParallel, one process per device."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from fulmen import ConfigurationError, Launcher
from fulmen.api import Precision
from fulmen_strategies import activation_checkpointing as ac
from fulmen_strategies.parallel import ParallelStrategy

START_METHODS = ("popen", "spawn", "fork")


#: StepDispatcher's attributes that are neither modules, parameters nor buffers
_PLAIN = frozenset({"ddp", "in_step", "backward_in_step", "target"})
_set = object.__setattr__  # per step: neither nn.Module's attribute checks nor a Python frame


class StepDispatcher(torch.nn.Module):
    """Lets DDP's forward run ``training_step`` (so its gradient hooks see the step):
    ``dispatcher(*args, fulmen_step="training_step")``; without ``fulmen_step`` it is the
    module's own forward (what Lite calls)."""

    target: torch.nn.Module  # ``module``, as a plain attribute

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module
        self.in_step = False  # inside a step: a backward there is manual optimization's
        self.backward_in_step = False
        self.ddp: Any = None  # the wrapper (a plain attribute, not a submodule)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PLAIN:
            _set(self, name, value)
        else:
            super().__setattr__(name, value)
            if name == "module":  # also as a plain attribute: read without nn.Module's lookup
                _set(self, "target", value)

    def forward(self, *args: Any, fulmen_step: str = "forward", **kwargs: Any) -> Any:
        target = self.target
        if fulmen_step == "forward":
            return target(*args, **kwargs)
        _set(self, "in_step", True)
        _set(self, "backward_in_step", False)
        try:
            return getattr(target, fulmen_step)(*args, **kwargs)
        finally:
            _set(self, "in_step", False)
            if self.backward_in_step:  # the reducer was prepared per backward: not again
                self.ddp.require_backward_grad_sync = False


def _prepare_for_backward(model: DistributedDataParallel, loss: torch.Tensor) -> None:
    """A backward inside DDP's forward (manual optimization): tell the reducer now what its
    forward would tell it at the end, so the gradients are averaged in this backward."""
    if torch.is_grad_enabled() and model.require_backward_grad_sync:
        model.require_forward_param_sync = True
        unused = model.find_unused_parameters and not model.static_graph
        model.reducer._rebuild_buckets()
        model.reducer.prepare_for_backward([loss] if unused else [])
    else:
        model.require_forward_param_sync = False


class DDPStrategy(ParallelStrategy):
    """Gradients averaged across processes during backward.

    ``start_method``: ``"popen"`` re-runs your script once per extra local process (``ddp``);
    ``"spawn"`` and ``"fork"`` start workers with multiprocessing and return to the main process
    (``ddp_spawn``, ``ddp_fork``/``ddp_notebook``). ``find_unused_parameters``,
    ``static_graph``, ``gradient_as_bucket_view`` and other keyword arguments go to
    ``torch.nn.parallel.DistributedDataParallel``. ``activation_checkpointing_policy``: module
    classes (or a predicate) whose activations are recomputed in backward (applied before DDP
    wraps the model, so its gradient hooks see the recomputed graph).
    """

    name = "ddp"

    def __init__(self, start_method: str = "popen", find_unused_parameters: bool = False,
                 static_graph: bool = False, gradient_as_bucket_view: bool = False,
                 process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None,
                 rendezvous_timeout: float | timedelta | None = None,
                 activation_checkpointing_policy: ac.Policy | None = None,
                 **ddp_kwargs: Any) -> None:
        super().__init__(process_group_backend, timeout, rendezvous_timeout)
        self.activation_checkpointing_policy = activation_checkpointing_policy
        self._checkpointed = ac.check_policy(type(self).__name__,
                                             activation_checkpointing_policy)
        if start_method not in START_METHODS:
            raise ConfigurationError(
                f"{type(self).__name__}(start_method={start_method!r}): use one of "
                f"{', '.join(map(repr, START_METHODS))} ('popen' re-runs the script per process)")
        self.start_method = start_method
        self._dispatcher: StepDispatcher | None = None  # what wrap_module put under DDP
        if type(self).name == DDPStrategy.name:  # the registered name these arguments select
            self.name = "ddp" + {"popen": "", "spawn": "_spawn", "fork": "_fork"}[start_method] \
                + ("_find_unused_parameters_true" if find_unused_parameters else "")
        self.ddp_kwargs = {"find_unused_parameters": find_unused_parameters,
                           "static_graph": static_graph,
                           "gradient_as_bucket_view": gradient_as_bucket_view, **ddp_kwargs}

    def create_launcher(self) -> Launcher | None:
        """``start_method="popen"``: ``ScriptLauncher``; ``"spawn"``/``"fork"``:
        ``MultiprocessingLauncher``; None when the cluster environment started the processes."""
        if self.cluster_environment.creates_processes_externally or self.start_method == "popen":
            return super().create_launcher()
        from fulmen_strategies.launchers.multiprocessing import MultiprocessingLauncher

        return MultiprocessingLauncher(self, start_method=self.start_method)

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        ac.apply(module, self._checkpointed, type(self).__name__)
        if not self.distributed:
            return module
        device_ids = [self.root_device.index] if self.root_device.type == "cuda" else None
        dispatcher = StepDispatcher(module)
        dispatcher.ddp = DistributedDataParallel(dispatcher, device_ids=device_ids,
                                                 **self.ddp_kwargs)
        self._dispatcher = dispatcher
        return dispatcher.ddp

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        model = self.model
        if method != "training_step" or not isinstance(model, DistributedDataParallel):
            return super().step(method, *args, **kwargs)
        sync = model.require_backward_grad_sync
        if type(self.precision).forward_context is Precision.forward_context:
            out = model(*args, fulmen_step=method, **kwargs)  # a null context: none entered
        else:
            with self.precision.forward_context():
                out = model(*args, fulmen_step=method, **kwargs)
        if model.require_backward_grad_sync is not sync:  # DDP is an nn.Module: setting costs
            model.require_backward_grad_sync = sync
        return out

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher.in_step:
            ddp: DistributedDataParallel = dispatcher.ddp
            if self.model is ddp:
                dispatcher.backward_in_step = True
                _prepare_for_backward(ddp, loss)
        super().backward(loss, *args, **kwargs)

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        if isinstance(self.model, DistributedDataParallel):
            with self.model.no_sync():
                yield
        else:
            yield
