"""MPS accelerator: the single Apple-silicon GPU."""

from __future__ import annotations

import platform

import torch

from fulmen import Accelerator
from fulmen_accelerators.mps.record import SPEC


class MPSAccelerator(Accelerator):
    """Apple-silicon GPU; there is one device, index 0."""

    name = SPEC.name  # the registered name, from the plugin's record
    device_type = "mps"

    @classmethod
    def is_available(cls) -> bool:
        return platform.system() == "Darwin" and torch.backends.mps.is_available()

    @classmethod
    def auto_device_count(cls) -> int:
        return 1 if cls.is_available() else 0

    @classmethod
    def availability_note(cls) -> str:
        if platform.system() != "Darwin":
            return f"MPS needs macOS on Apple silicon; this is {platform.system()}"
        return "torch.backends.mps.is_available() is False"

    def teardown(self) -> None:
        torch.mps.empty_cache()

    def get_device_stats(self, device: torch.device) -> dict[str, float]:
        """Memory held by tensors and by the Metal driver (bytes)."""
        return {"mps.current_allocated_bytes": float(torch.mps.current_allocated_memory()),
                "mps.driver_allocated_bytes": float(torch.mps.driver_allocated_memory())}
