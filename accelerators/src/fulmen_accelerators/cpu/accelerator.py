"""CPU accelerator: ``devices`` is a number of processes, not a list of devices."""

from __future__ import annotations

import os
from typing import Any

import torch

from fulmen import Accelerator, ConfigurationError
from fulmen_accelerators.cpu import SPEC


class CPUAccelerator(Accelerator):
    """Runs on the CPU. ``devices=k`` starts k processes (with a distributed strategy)."""

    name = SPEC.name  # the registered name, from the plugin's record
    device_type = "cpu"

    @classmethod
    def is_available(cls) -> bool:
        return True

    @classmethod
    def auto_device_count(cls) -> int:
        return 1

    def parse_devices(self, devices: Any) -> list[int]:
        """``"auto"`` → 1 process; a positive int or digit string → that many processes."""
        count: Any = devices
        if isinstance(devices, str):
            text = devices.strip().lower()
            count = 1 if text == "auto" else int(text) if text.isdigit() else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigurationError(
                f"devices={devices!r} is not valid for accelerator 'cpu': on the CPU, devices is "
                "the number of processes to run. Valid: a positive int (2), a string count ('2') "
                f"or 'auto' (1). This machine has {os.cpu_count()} cores."
            )
        cores = os.cpu_count() or 1
        if count > max(64, 16 * cores):
            raise ConfigurationError(
                f"devices={devices!r} on the CPU would start {count} processes on a machine with "
                f"{cores} cores; at most {max(64, 16 * cores)} are accepted here. Give the number "
                "of processes to run (usually at most the number of cores)")
        return list(range(count))

    @classmethod
    def get_parallel_devices(cls, device_ids: list[int]) -> list[torch.device]:
        return [torch.device("cpu")] * len(device_ids)

    def get_device_stats(self, device: torch.device) -> dict[str, float]:
        """``cpu_percent``, ``cpu_vm_percent``, ``cpu_swap_percent`` (needs ``psutil``)."""
        from fulmen.utilities.device_stats import get_cpu_stats

        return get_cpu_stats()
