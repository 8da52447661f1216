"""``DataParallelStrategy``: one process, the batch split over its GPUs every step.

Each step the module is replicated to every GPU, the batch is split along dimension 0, each
replica runs ``training_step`` on its part, and the outputs come back to the first GPU. A
module's ``training_step_end(outputs)`` (and ``validation_step_end``, ``test_step_end``)
receives the gathered parts — scalar losses as a vector with one entry per GPU — and returns the
reduced output; without one, losses are averaged. State changed inside a replica is lost.
"""

from __future__ import annotations

from typing import Any

import torch

from fulmen import Strategy
from fulmen.apply import apply_to_tensors
from fulmen.utilities.forward_redirection import StepDispatcher
from fulmen_strategies.dp import SPEC
from fulmen_strategies.local_collectives import LocalCollectives

_END = {"training_step": "training_step_end", "validation_step": "validation_step_end",
        "test_step": "test_step_end"}


def finish_step(module: torch.nn.Module, method: str, output: Any) -> Any:
    """The module's ``*_step_end`` on gathered parts if it has one, else averaged losses."""
    from fulmen.module import Module

    end = _END.get(method, "")
    if end and getattr(type(module), end) is not getattr(Module, end):
        return getattr(module, end)(output)
    return mean_losses(output)


def mean_losses(output: Any) -> Any:
    """Default reduction of gathered parts: vectors of per-GPU scalars become their mean."""
    if isinstance(output, torch.Tensor):
        return output.mean() if output.ndim == 1 and output.is_floating_point() else output
    if isinstance(output, dict) and "loss" in output:
        return {**output, "loss": mean_losses(output["loss"])}
    return output


class OneProcessPerNode:
    """For strategies whose one process drives every selected GPU of its node (``dp``,
    ``ddp2``): the first device is the root, the module is replicated with DataParallel."""

    parallel_devices: list[torch.device]

    @property
    def processes_per_node(self) -> int:
        return 1

    @property
    def root_device(self) -> torch.device:
        return self.parallel_devices[0] if self.parallel_devices else torch.device("cpu")

    def data_parallel(self, module: torch.nn.Module) -> torch.nn.DataParallel:
        ids = [d.index for d in self.parallel_devices if d.type == "cuda"]
        return torch.nn.DataParallel(StepDispatcher(module), device_ids=ids or None)


class DataParallelStrategy(OneProcessPerNode, LocalCollectives, Strategy):
    """``torch.nn.DataParallel`` on every selected GPU of this process."""

    name = SPEC.name  # the registered name, from the plugin's record

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        return self.data_parallel(module)

    def batch_to_device(self, batch: Any, device: torch.device | None = None) -> Any:
        return super().batch_to_device(batch, device or self.root_device)

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        module, model = self.module, self.model
        assert module is not None and model is not None
        if method in ("predict_step", "forward"):  # forward: Lite's call, through the wrapper
            return super().step(method, *args, **kwargs)
        with self.precision.forward_context():
            output = model(*args, fulmen_step=method, **kwargs)
        return finish_step(module, method, output)

    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        """One process: gathered per-GPU values are reduced here."""
        def fx(t: torch.Tensor) -> torch.Tensor:
            if t.ndim == 0:
                return t
            op = str(reduce_op)
            return t.sum() if op == "sum" else t.max() if op == "max" else t.min() \
                if op == "min" else t.mean()
        return apply_to_tensors(tensor, fx)
