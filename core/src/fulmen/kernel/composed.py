"""What composition decides: the frozen :class:`Selection` a Trainer or Lite runs with (built by
:mod:`fulmen.kernel.compose`, handed to ``fulmen_check_selection``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fulmen.api import (
        Accelerator,
        CheckpointIO,
        ClusterEnvironment,
        Launcher,
        Precision,
        Strategy,
    )
    from fulmen.api.notice import PreemptionNotice


@dataclass(frozen=True)
class Selection:
    """What a Trainer or Lite runs with, decided once at construction."""

    environment: ClusterEnvironment
    accelerator: Accelerator
    strategy: Strategy
    precision: Precision
    launcher: Launcher | None
    checkpoint_io: CheckpointIO | None
    device_ids: tuple[int, ...]
    num_nodes: int
    interactive: bool
    #: stop-notice sources passed in ``plugins=[...]`` (besides the environment's own)
    notices: tuple[PreemptionNotice, ...] = ()

    @property
    def num_devices(self) -> int:
        return len(self.device_ids)
