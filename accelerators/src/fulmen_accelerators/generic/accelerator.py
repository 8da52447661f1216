"""``TorchAccelerator``: an accelerator driven only through ``torch.accelerator`` (which device
type, how many, whether available) and the device type's module (``torch.get_device_module``:
``set_device``, ``synchronize``, ``memory_stats``, ``empty_cache``), so it works for any backend
torch knows — including a PrivateUse1 backend registered from Python, whose calls
``torch.accelerator`` cannot route without a C++ device guard."""

from __future__ import annotations

from typing import Any

import torch

from fulmen import Accelerator, ConfigurationError


class TorchAccelerator(Accelerator):
    """The device type torch reports as its current accelerator (``torch.accelerator.
    current_accelerator()``); ``device_type`` must name it (default: that one)."""

    name = "torch_accelerator"

    def __init__(self, device_type: str | None = None) -> None:
        current = self.current_type()
        if current is None:
            raise ConfigurationError(
                f"TorchAccelerator(device_type={device_type!r}): torch {torch.__version__} "
                "exposes no accelerator (torch.accelerator.current_accelerator() is None); use "
                "accelerator='cpu', or install the torch build or vendor package for your device")
        if device_type is not None and device_type != current:
            raise ConfigurationError(
                f"TorchAccelerator(device_type={device_type!r}): torch exposes {current!r} "
                f"through torch.accelerator, not {device_type!r}; use device_type={current!r}")
        self.device_type = self.name = current

    @staticmethod
    def current_type() -> str | None:
        """The device type of torch's current accelerator, or None."""
        current = torch.accelerator.current_accelerator()
        return None if current is None else current.type

    @classmethod
    def is_available(cls) -> bool:
        return cls.current_type() is not None and torch.accelerator.is_available()

    @classmethod
    def auto_device_count(cls) -> int:
        return torch.accelerator.device_count() if cls.current_type() is not None else 0

    @classmethod
    def availability_note(cls) -> str:
        current = cls.current_type()
        if current is None:
            return f"torch {torch.__version__} exposes no accelerator through torch.accelerator"
        return f"torch.accelerator.is_available() is False for {current!r}"

    @classmethod
    def get_parallel_devices(cls, device_ids: list[int]) -> list[torch.device]:
        device_type = cls.current_type() or "cpu"
        return [torch.device(device_type, i) for i in device_ids]

    @property
    def device_module(self) -> Any:
        """``torch.<device_type>``: the module the backend registered with torch."""
        return torch.get_device_module(self.device_type)

    def setup_device(self, device: torch.device) -> None:
        self.device_module.set_device(device.index or 0)

    def synchronize(self, device: torch.device | None = None) -> None:
        self.device_module.synchronize(device)

    def memory_stats(self, device: torch.device | None = None) -> dict[str, Any]:
        return dict(self.device_module.memory_stats(device))

    def teardown(self) -> None:
        self.device_module.empty_cache()
