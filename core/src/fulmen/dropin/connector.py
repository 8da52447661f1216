"""Lightning's private trainer plumbing that libraries import (scvi-tools' ``parse_device_args``,
nequip's XPU support): ``_AcceleratorConnector`` (what ``accelerator=`` / ``devices=`` resolve
to), ``trainer.setup._log_device_info`` and ``_IS_INTERACTIVE``. Served from fulmen's own
selection (:func:`fulmen.kernel.selection.select`), so the answers are the ones a fulmen
``Trainer`` built from the same arguments would use."""

from __future__ import annotations

from typing import Any

from fulmen.errors import ConfigurationError
from fulmen.kernel.compose import is_interactive
from fulmen.kernel.selection import select
from fulmen.utilities.rank_zero import rank_zero_info, rank_zero_warn
from fulmen.utilities.warnings import PossibleUserWarning

__all__ = ["IS_INTERACTIVE", "AcceleratorConnector", "log_device_info"]

#: whether Python runs interactively (a REPL, ``python -i``, a notebook), as fulmen's selection
#: decides it
IS_INTERACTIVE = is_interactive()


class AcceleratorConnector:
    """Lightning's ``_AcceleratorConnector``: resolves the Trainer's hardware arguments.

    After construction ``accelerator``, ``strategy``, ``precision_plugin``,
    ``cluster_environment`` and ``checkpoint_io`` are what a ``Trainer`` with these arguments
    runs with, and Lightning's resolved flags are set: ``_accelerator_flag`` (``"cpu"``,
    ``"cuda"``, ``"mps"``...; ``"auto"`` and ``"gpu"`` resolved), ``_devices_flag`` (the
    device count on CPU, the device indices elsewhere), ``_parallel_devices`` and
    ``_num_nodes_flag``. ``accelerator="gpu"`` without a GPU raises as in Lightning.
    """

    def __init__(self, devices: Any = "auto", num_nodes: int = 1, accelerator: Any = "auto",
                 strategy: Any = "auto", plugins: Any = None, precision: Any = None,
                 sync_batchnorm: bool = False, benchmark: bool | None = None,
                 use_distributed_sampler: bool = True, deterministic: Any = None) -> None:
        if accelerator == "gpu":
            accelerator = self._choose_gpu_accelerator_backend()
        selection = select("Trainer", accelerator=accelerator, strategy=strategy,
                           devices=devices, num_nodes=num_nodes,
                           precision="32-true" if precision is None else precision,
                           plugins=plugins)
        self.accelerator = selection.accelerator
        self.strategy = selection.strategy
        self.precision_plugin = selection.precision
        self.cluster_environment = selection.environment
        self.checkpoint_io = selection.checkpoint_io
        self.use_distributed_sampler = use_distributed_sampler
        ids = list(selection.device_ids)
        self._accelerator_flag: Any = self.accelerator.name
        self._devices_flag: Any = len(ids) if self.accelerator.device_type == "cpu" else ids
        self._parallel_devices = self.accelerator.get_parallel_devices(ids)
        self._num_nodes_flag = selection.num_nodes
        self._strategy_flag: Any = strategy
        self._precision_flag: Any = precision
        self._sync_batchnorm = sync_batchnorm

    @staticmethod
    def _choose_auto_accelerator() -> str:
        """``accelerator="auto"``: what this machine has (``_select_auto_accelerator``)."""
        from fulmen.dropin.device_parser import select_auto_accelerator

        return select_auto_accelerator()

    @staticmethod
    def _choose_gpu_accelerator_backend() -> str:
        """``accelerator="gpu"``: MPS, else CUDA; neither raises, as in Lightning."""
        from fulmen_accelerators import CUDAAccelerator, MPSAccelerator

        if MPSAccelerator.is_available():
            return "mps"
        if CUDAAccelerator.is_available():
            return "cuda"
        raise ConfigurationError("No supported gpu backend found!")

    # Lightning's connector chooses these in its __init__; fulmen's selection chose them above.
    # nequip (XPU support) wraps the two methods: a wrapper that falls back to the original
    # gets fulmen's choice. fulmen's Trainer does not call them, so wrapping them changes
    # nothing there (docs/migrating.md).
    def _choose_strategy(self) -> Any:
        """The strategy chosen for these arguments (Lightning's ``_choose_strategy``)."""
        return self.strategy

    def _check_and_init_precision(self) -> Any:
        """The precision plugin chosen for these arguments."""
        return self.precision_plugin

    def _validate_precision_choice(self) -> None:
        """Lightning checks the precision against the accelerator here; fulmen's selection
        checked it when this connector was built (an invalid choice raised there)."""

    @property
    def is_distributed(self) -> bool:
        """Whether the selected strategy spans several processes."""
        return len(self._parallel_devices) * self._num_nodes_flag > 1


def log_device_info(trainer: Any) -> None:
    """Lightning's ``trainer.setup._log_device_info``: says which accelerators are available
    and used, and warns when a GPU is available but not used."""
    from fulmen_accelerators import CUDAAccelerator, MPSAccelerator

    cuda, mps = CUDAAccelerator.is_available(), MPSAccelerator.is_available()
    gpu_type = " (cuda)" if cuda else " (mps)" if mps else ""
    used = isinstance(trainer.accelerator, CUDAAccelerator | MPSAccelerator)
    rank_zero_info(f"GPU available: {cuda or mps}{gpu_type}, used: {used}")
    rank_zero_info("TPU available: False, using: 0 TPU cores")
    if (cuda and not isinstance(trainer.accelerator, CUDAAccelerator)) or \
            (mps and not isinstance(trainer.accelerator, MPSAccelerator)):
        rank_zero_warn("GPU available but not used. You can set it by doing "
                       "`Trainer(accelerator='gpu')`.", category=PossibleUserWarning)
