"""Small Lightning names that scripts import and fulmen has no other home for:
``cli_lightning_logo`` (Lightning's examples print it first), the availability flags of
``lightning.pytorch.utilities.imports``, the type variables of Lightning's signatures, the
``warning_cache`` several Lightning modules share, and the ``DistributedDataParallel`` protocol
of ``lightning.pytorch.utilities.types``."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from lightning_utilities.core.imports import RequirementCache

from fulmen.utilities.rank_zero import WarningCache

__all__ = ["_OMEGACONF_AVAILABLE", "_RICH_AVAILABLE", "_TORCHVISION_AVAILABLE",
           "_TORCHMETRICS_AVAILABLE", "cli_lightning_logo"]

_TORCHVISION_AVAILABLE = RequirementCache("torchvision")
_RICH_AVAILABLE = RequirementCache("rich")
_OMEGACONF_AVAILABLE = RequirementCache("omegaconf")
_TORCHMETRICS_AVAILABLE = RequirementCache("torchmetrics")

#: Lightning's type variables (``lightning.fabric.strategies.strategy.TBroadcast``...)
TBroadcast = TypeVar("TBroadcast")
TReduce = TypeVar("TReduce")
TModel = TypeVar("TModel")
T_destination = TypeVar("T_destination", bound=dict[str, Any])
ModuleType = TypeVar("ModuleType")

#: the ``WarningCache`` Lightning's modules warn through once per message
warning_cache = WarningCache()


class DistributedDataParallel(Protocol):
    """The constructor and ``no_sync`` of ``torch.nn.parallel.DistributedDataParallel`` (what
    Lightning's type hints name)."""

    def __init__(self, module: Any, device_ids: list[Any] | None = None,
                 output_device: Any = None, dim: int = 0, broadcast_buffers: bool = True,
                 process_group: Any = None, bucket_cap_mb: int = 25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False) -> None: ...

    def no_sync(self) -> AbstractContextManager[Any]: ...


def cli_lightning_logo() -> None:
    """Lightning prints its ASCII logo; under fulmen, one line saying what runs the script."""
    import fulmen

    print(f"\n fulmen {fulmen.__version__} (running a Lightning script)\n")
