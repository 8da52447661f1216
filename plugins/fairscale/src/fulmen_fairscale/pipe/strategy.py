"""``PipeStrategy``: one process drives several devices, each holding a slice of the module's
``nn.Sequential`` (FairScale ``Pipe``: GPipe micro-batch pipelining, activation checkpointing).

The ``nn.Sequential`` stays where it is in the user's module (same attribute, same parameters,
same ``state_dict`` keys, so checkpoints load into the unsplit model): only its forward is
routed through the pipe while a stage runs. Inputs go to the first partition's device and the
output comes back on ``root_device`` (the first device), so the rest of the step is unchanged.
"""

from __future__ import annotations

import atexit
import warnings
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from fairscale.nn import Pipe
from fairscale.nn.pipe.worker import join_workers

from fulmen import ConfigurationError
from fulmen.api import as_messages
from fulmen_fairscale.pipe import SPEC
from fulmen_fairscale.pipe.locate import find_sequential, resolve_balance
from fulmen_strategies.single_device.strategy import SingleDeviceStrategy

CHECKPOINT_MODES = ("never", "except_last", "always")
_OPEN_PIPES: weakref.WeakSet[Pipe] = weakref.WeakSet()


class PipeForward:
    """Replaces the ``nn.Sequential``'s forward (a plain callable, so nothing new is registered
    in the module or its ``state_dict``)."""

    def __init__(self, pipe: Pipe, output_device: torch.device) -> None:
        self.pipe, self.output_device = pipe, output_device

    def __call__(self, input: Any) -> Any:
        output = self.pipe(input)
        if isinstance(output, torch.Tensor):
            return output.to(self.output_device)
        return tuple(t.to(self.output_device) for t in output)


class PipeStrategy(SingleDeviceStrategy):
    """Split ``nn.Sequential`` layers over the selected devices.

    balance: layers per device, e.g. ``[2, 3]`` (must sum to the number of layers; one entry per
        device). None: as even as possible.
    chunks: micro-batches each batch is split into (more keeps more devices busy).
    checkpoint: activation checkpointing: ``"never"``, ``"except_last"`` (every micro-batch but
        the last) or ``"always"`` (least memory, one more forward per micro-batch).
    module_name: the attribute (dotted path) of the ``nn.Sequential`` to split. None: the
        ``sequential_module`` attribute, else the module itself if it is an ``nn.Sequential``,
        else its only ``nn.Sequential`` child.
    deferred_batch_norm: batch-norm statistics over the whole batch, not per micro-batch.
    """

    name = SPEC.name  # the registered name, from the plugin's record

    def __init__(self, balance: Sequence[int] | None = None, chunks: int = 1,
                 checkpoint: str = "except_last", module_name: str | None = None,
                 deferred_batch_norm: bool = False) -> None:
        super().__init__()
        if balance is not None and (isinstance(balance, str) or not all(
                isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in balance)):
            raise ConfigurationError(f"PipeStrategy(balance={balance!r}): give a list of "
                                     "positive layer counts, one per device (e.g. [2, 3])")
        if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks < 1:
            raise ConfigurationError(f"PipeStrategy(chunks={chunks!r}): the number of "
                                     "micro-batches must be a positive int (e.g. 4)")
        if checkpoint not in CHECKPOINT_MODES:
            raise ConfigurationError(f"PipeStrategy(checkpoint={checkpoint!r}): use one of "
                                     f"{list(CHECKPOINT_MODES)}")
        self.balance = list(balance) if balance is not None else None
        self.chunks, self.checkpoint = chunks, checkpoint
        self.module_name, self.deferred_batch_norm = module_name, deferred_batch_norm
        self.pipe: Pipe | None = None
        self._sequential: torch.nn.Sequential | None = None

    # ------------------------------------------------------------------ composition

    def check_selection(self, selection: Any) -> list[str]:
        """What this pipe cannot run on."""
        problems = as_messages(super().check_selection(selection))
        devices = selection.num_devices
        if self.balance is not None and len(self.balance) != devices:
            problems.append(
                f"PipeStrategy(balance={self.balance}) has {len(self.balance)} partitions but "
                f"devices={devices} were selected; give devices={len(self.balance)}, or one "
                "balance entry per device")
        env = selection.environment
        if env.creates_processes_externally and env.world_size() > 1:
            problems.append(
                f"strategy 'pipe' drives all devices from one process, but the {env.name!r} "
                f"environment started {env.world_size()} processes; launch one process "
                "(e.g. torchrun --nproc-per-node=1), or use a data-parallel strategy ('ddp')")
        return problems

    # ------------------------------------------------------------------ model

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        module = self.module_to_device(self.precision.convert_module(module))
        name, sequential = find_sequential(module, self.module_name)
        where = f"{type(module).__name__}.{name}" if name else type(module).__name__
        devices = self.parallel_devices or [self.root_device]
        balance = resolve_balance(self.balance, len(sequential), len(devices), where)
        self._close()
        try:
            with warnings.catch_warnings():
                # It points to torch.distributed.pipeline.sync.Pipe, which torch no longer has.
                warnings.filterwarnings("ignore", "fairscale.nn.Pipe has been upstreamed",
                                        DeprecationWarning)
                pipe = Pipe(sequential, balance, devices=devices[:len(balance)],
                            chunks=self.chunks, checkpoint=self.checkpoint,
                            deferred_batch_norm=self.deferred_batch_norm)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"strategy 'pipe' cannot split {where}: {exc}") from exc
        _OPEN_PIPES.add(pipe)
        sequential.forward = PipeForward(pipe, self.root_device)  # type: ignore[method-assign]
        self.pipe, self._sequential = pipe, sequential
        self.module, self.model = module, self.wrap_module(module)
        return self.model

    def teardown(self) -> None:
        self._close()
        super().teardown()

    def _close(self) -> None:
        """Give the ``nn.Sequential`` its own forward back and stop the pipe's threads."""
        if self._sequential is not None:
            self._sequential.__dict__.pop("forward", None)
        if self.pipe is not None:
            _stop_workers(self.pipe)
        self.pipe, self._sequential = None, None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "pipe": None, "_sequential": None}


def _stop_workers(pipe: Pipe) -> None:
    """Join the pipe's worker threads now. FairScale does it in ``Pipeline.__del__``, which at
    interpreter exit waits forever for threads that no longer run."""
    pipeline = pipe.pipeline
    if pipeline.in_queues:
        join_workers(pipeline.in_queues, pipeline.out_queues)
        pipeline.in_queues, pipeline.out_queues = [], []
    _OPEN_PIPES.discard(pipe)


@atexit.register
def _stop_all() -> None:
    for pipe in list(_OPEN_PIPES):
        _stop_workers(pipe)
