"""``DDPStrategy``: torch DistributedDataParallel, one process per device."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from fulmen import ConfigurationError, Launcher
from fulmen.utilities.forward_redirection import StepDispatcher
from fulmen_strategies import activation_checkpointing as ac
from fulmen_strategies.ddp.variants import VARIANTS, variant_name
from fulmen_strategies.parallel import ParallelStrategy

START_METHODS = ("popen", "spawn", "fork")


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

    name = VARIANTS[0][0]  # "ddp": the registered names come from the one table

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
            defaults = {"start_method": "popen", "find_unused_parameters": False}
            self.name = variant_name(VARIANTS, {"start_method": start_method,
                                                "find_unused_parameters": find_unused_parameters},
                                     defaults) or \
                variant_name(VARIANTS, {"start_method": start_method}, defaults) or \
                DDPStrategy.name
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
        ddp = DistributedDataParallel(dispatcher, device_ids=device_ids, **self.ddp_kwargs)
        # a backward inside the step (manual optimization) prepared the reducer itself: the
        # forward's own preparation is not wanted once more
        dispatcher.after_step = functools.partial(setattr, ddp, "require_backward_grad_sync",
                                                  False)
        self._dispatcher = dispatcher
        return ddp

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        model = self.model
        if not isinstance(model, DistributedDataParallel):
            return super().step(method, *args, **kwargs)
        if method != "training_step":
            # Evaluation steps go through DDP's forward when it has buffers to broadcast (batch
            # norm statistics: every rank evaluates with rank 0's, as under Lightning, whose
            # evaluation steps always go through the wrapper); otherwise that forward does
            # nothing a step could observe, and the module is called directly.
            if method == "forward" or not model.will_sync_module_buffers():
                return super().step(method, *args, **kwargs)
            with self.precision.forward_context():
                return model(*args, fulmen_step=method, **kwargs)
        sync = model.require_backward_grad_sync
        with self.precision.forward_context():
            out = model(*args, fulmen_step=method, **kwargs)
        if model.require_backward_grad_sync is not sync:  # DDP is an nn.Module: setting costs
            model.require_backward_grad_sync = sync
        return out

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher.in_step:
            ddp = self.model
            if isinstance(ddp, DistributedDataParallel):
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
