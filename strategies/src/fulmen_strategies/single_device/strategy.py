"""One process on one device: collectives are identities."""

from __future__ import annotations

import torch

from fulmen import Strategy
from fulmen_strategies.local_collectives import LocalCollectives
from fulmen_strategies.single_device import SPEC


class SingleDeviceStrategy(LocalCollectives, Strategy):
    """Trains in the current process on ``parallel_devices[0]``."""

    name = SPEC.name  # the registered name, from the plugin's record

    @property
    def processes_per_node(self) -> int:
        return 1

    @property
    def root_device(self) -> torch.device:
        return self.parallel_devices[0] if self.parallel_devices else torch.device("cpu")

