"""``DDPStrategy``: torch DistributedDataParallel, one process per device."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from fulmen import ConfigurationError, Launcher
from fulmen_strategies.parallel import ParallelStrategy

START_METHODS = ("popen", "spawn", "fork")


class StepDispatcher(torch.nn.Module):
    """Lets DDP's forward run ``training_step`` (so its gradient hooks see the step):
    ``dispatcher(*args, fulmen_step="training_step")``; without ``fulmen_step`` it is the
    module's own forward (what Lite calls)."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args: Any, fulmen_step: str = "forward", **kwargs: Any) -> Any:
        if fulmen_step == "forward":
            return self.module(*args, **kwargs)
        return getattr(self.module, fulmen_step)(*args, **kwargs)


class DDPStrategy(ParallelStrategy):
    """Gradients averaged across processes during backward.

    ``start_method``: ``"popen"`` re-runs your script once per extra local process (``ddp``);
    ``"spawn"`` and ``"fork"`` start workers with multiprocessing and return to the main process
    (``ddp_spawn``, ``ddp_fork``/``ddp_notebook``). ``find_unused_parameters``,
    ``static_graph``, ``gradient_as_bucket_view`` and other keyword arguments go to
    ``torch.nn.parallel.DistributedDataParallel``.
    """

    def __init__(self, start_method: str = "popen", find_unused_parameters: bool = False,
                 static_graph: bool = False, gradient_as_bucket_view: bool = False,
                 process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None, **ddp_kwargs: Any) -> None:
        super().__init__(process_group_backend, timeout)
        if start_method not in START_METHODS:
            raise ConfigurationError(
                f"{type(self).__name__}(start_method={start_method!r}): use one of "
                f"{', '.join(map(repr, START_METHODS))} ('popen' re-runs the script per process)")
        self.start_method = start_method
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
        if not self.distributed:
            return module
        device_ids = [self.root_device.index] if self.root_device.type == "cuda" else None
        return DistributedDataParallel(StepDispatcher(module), device_ids=device_ids,
                                       **self.ddp_kwargs)

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        model = self.model
        if method != "training_step" or not isinstance(model, DistributedDataParallel):
            return super().step(method, *args, **kwargs)
        with self.precision.forward_context():
            return model(*args, fulmen_step=method, **kwargs)

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        if isinstance(self.model, DistributedDataParallel):
            with self.model.no_sync():
                yield
        else:
            yield
