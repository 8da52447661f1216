"""Host statistics through ``psutil`` (optional): what ``DeviceStatsMonitor`` logs for the CPU."""

from __future__ import annotations

from importlib.util import find_spec

CPU_VM_PERCENT = "cpu_vm_percent"
CPU_PERCENT = "cpu_percent"
CPU_SWAP_PERCENT = "cpu_swap_percent"


def psutil_available() -> bool:
    return find_spec("psutil") is not None


def get_cpu_stats() -> dict[str, float]:
    """System-wide CPU utilisation, RAM and swap use in percent (Lightning's key names)."""
    if not psutil_available():
        from fulmen.errors import ConfigurationError

        raise ConfigurationError("CPU statistics (DeviceStatsMonitor on the CPU, or "
                                 "cpu_stats=True) are read with psutil, which is not installed: "
                                 "pip install psutil, or pass DeviceStatsMonitor(cpu_stats=False)")
    import psutil

    return {CPU_VM_PERCENT: psutil.virtual_memory().percent,
            CPU_PERCENT: psutil.cpu_percent(),
            CPU_SWAP_PERCENT: psutil.swap_memory().percent}
