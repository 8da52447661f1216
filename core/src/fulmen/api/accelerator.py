"""``Accelerator``: one kind of hardware — availability, device counting, ``devices`` parsing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from fulmen.api.naming import Named
from fulmen.errors import ConfigurationError

if TYPE_CHECKING:
    import torch

DEVICES_HELP = ("an int count (2), -1 for all, a list of indices ([0, 1]), a string of indices "
                "('1, 3'), a string count ('3'), '-1' or 'auto'")


class Accelerator(Named, ABC):
    """Hardware backend. Subclasses set ``device_type`` and implement the class methods."""

    device_type: str = "cpu"

    @classmethod
    @abstractmethod
    def is_available(cls) -> bool:
        """Whether this hardware can be used in this process."""

    @classmethod
    @abstractmethod
    def auto_device_count(cls) -> int:
        """How many devices exist (what ``devices=-1`` and ``"auto"`` use)."""

    @classmethod
    def availability_note(cls) -> str:
        """Why the hardware is unavailable, for error messages (e.g. 'torch is a CPU build')."""
        return ""

    def parse_devices(self, devices: Any) -> list[int]:
        """Turn the user's ``devices`` into device indices (the table of the GPU guide).

        ``3`` → ``[0, 1, 2]``; ``-1``/``"-1"``/``"auto"`` → all; ``[1, 3]`` → ``[1, 3]``;
        ``"1, 3"`` → ``[1, 3]``; ``"3"`` → ``[0, 1, 2]``. Anything else is a ``ConfigurationError``.
        """
        available = self.auto_device_count()

        def bad(why: str) -> ConfigurationError:
            return ConfigurationError(f"devices={devices!r} is not valid for accelerator "
                                      f"{self.name!r}: {why}. Valid: {DEVICES_HELP}.")

        def all_devices() -> list[int]:
            if available < 1:
                raise bad(f"no {self.name} device was found")
            return list(range(available))

        def count(n: int) -> list[int]:
            if n == -1:
                return all_devices()
            if n < 1:
                raise bad("a device count must be a positive int, or -1 for all")
            if n > available:
                raise bad(f"{n} devices were asked for but only {available} "
                          f"{'is' if available == 1 else 'are'} available")
            return list(range(n))

        def indices(items: list[Any]) -> list[int]:
            if not items:
                raise bad("the list of device indices is empty")
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
                raise bad("device indices must be ints")
            if len(set(items)) != len(items):
                dupes = sorted({i for i in items if items.count(i) > 1})
                raise bad(f"device {', '.join(map(str, dupes))} is listed more than once")
            missing = [i for i in items if not 0 <= i < available]
            if missing:
                have = f"indices 0-{available - 1}" if available else "none"
                raise bad(f"device {missing[0]} does not exist ({available} available: {have})")
            return list(items)

        if isinstance(devices, bool) or devices is None:
            raise bad("expected a count, indices or 'auto'")
        if isinstance(devices, int):
            return count(devices)
        if isinstance(devices, list | tuple):
            return indices(list(devices))
        if isinstance(devices, str):
            text = devices.strip().lower()
            if text in ("auto", "-1"):
                return all_devices()
            if "," in text:
                parts = [p.strip() for p in text.split(",")]
                if parts[-1] == "" and len(parts) > 1:
                    parts = parts[:-1]  # "1," is the legacy spelling of "device 1 only"
                if any(p == "" for p in parts):
                    raise bad("it has an empty entry between commas")
                if not all(p.isdigit() for p in parts):
                    raise bad("each comma-separated entry must be a device index")
                return indices([int(p) for p in parts])
            if text.isdigit():
                return count(int(text))
            raise bad("it is neither a count nor a list of indices")
        raise bad(f"a {type(devices).__name__} cannot select devices")

    @classmethod
    def get_parallel_devices(cls, device_ids: list[int]) -> list[torch.device]:
        """``torch.device`` objects for the parsed indices."""
        import torch

        return [torch.device(cls.device_type, i) for i in device_ids]

    def synchronize(self, device: torch.device | None = None) -> None:
        """Wait until queued work on ``device`` (default: the current one) is done, e.g. before
        timing a step. Default: nothing to wait for (the CPU)."""

    def memory_stats(self, device: torch.device | None = None) -> dict[str, Any]:
        """The device's allocator statistics (``torch.cuda.memory_stats`` style keys), for
        logging. Default: ``{}``."""
        return {}

    def setup_device(self, device: torch.device) -> None:
        """Prepare ``device`` for use by this process (set the current CUDA device...)."""

    def teardown(self) -> None:
        """Release what ``setup_device`` took."""

    def get_device_stats(self, device: torch.device) -> dict[str, float]:
        """Statistics of ``device`` for ``DeviceStatsMonitor`` (memory in use, utilisation...),
        as flat ``name -> number``; read on the calling process only, no collective. The default
        is empty: a backend with nothing to report logs nothing."""
        return {}

    @classmethod
    def get_available_flops(cls, device: torch.device, dtype: torch.dtype | str) -> int | None:
        """Theoretical peak FLOPs per second of one ``device`` computing in ``dtype`` (the
        denominator of ``ThroughputMonitor``'s MFU); None when unknown (the default)."""
        return None
