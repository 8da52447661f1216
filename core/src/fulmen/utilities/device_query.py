"""Lightning's device helpers: CUDA device counts and which GPUs are free
(``find_usable_cuda_devices``), ``nvidia-smi`` statistics of a GPU, and the host statistics
Lightning logs for an Apple MPS device."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from fulmen.errors import MissingDependencyError
from fulmen.utilities.device_stats import psutil_available

__all__ = ["find_usable_cuda_devices", "get_mps_stats", "get_nvidia_gpu_stats",
           "is_cuda_available", "num_cuda_devices"]


def num_cuda_devices() -> int:
    """How many CUDA devices this process sees."""
    import torch

    return torch.cuda.device_count()


def is_cuda_available() -> bool:
    """Whether CUDA can be used here."""
    import torch

    return torch.cuda.is_available()


def find_usable_cuda_devices(num_devices: int = -1) -> list[int]:
    """The indices of ``num_devices`` visible GPUs that accept a tensor now (all usable ones
    with -1), for ``Trainer(devices=find_usable_cuda_devices(2))`` on a machine whose GPUs are
    in exclusive mode; an error when there are not that many. Processes calling it at the same
    time may pick the same free device."""
    import torch

    if num_devices == 0:
        return []
    visible = list(range(num_cuda_devices()))
    if not visible:
        raise ValueError(f"You requested to find {num_devices} devices but there are no visible "
                         "CUDA devices on this machine.")
    if num_devices > len(visible):
        raise ValueError(f"You requested to find {num_devices} devices but this machine only has "
                         f"{len(visible)} GPUs.")
    usable, occupied = [], []
    for index in visible:
        try:
            torch.tensor(0, device=torch.device("cuda", index))
        except RuntimeError:
            occupied.append(index)
            continue
        usable.append(index)
        if len(usable) == num_devices:
            break
    if num_devices != -1 and len(usable) != num_devices:
        raise RuntimeError(f"You requested to find {num_devices} devices but only {len(usable)} "
                           f"are currently available. The devices {occupied} are occupied by "
                           "other processes and can't be used at the moment.")
    return usable


_GPU_METRICS = [("utilization.gpu", "%"), ("memory.used", "MB"), ("memory.free", "MB"),
                ("utilization.memory", "%"), ("fan.speed", "%"), ("temperature.gpu", "°C"),
                ("temperature.memory", "°C")]


def get_nvidia_gpu_stats(device: Any) -> dict[str, float]:
    """Utilisation, memory, fan and temperatures of a GPU from ``nvidia-smi`` (keys such as
    ``"memory.used (MB)"``); ``FileNotFoundError`` without ``nvidia-smi``."""
    import torch

    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        raise FileNotFoundError("nvidia-smi: command not found")
    index = torch.device(device).index if not isinstance(device, int) else device
    visible = os.getenv("CUDA_VISIBLE_DEVICES",
                        ",".join(str(i) for i in range(num_cuda_devices()))).split(",")
    gpu_id = visible[index or 0].strip()
    query = ",".join(name for name, _ in _GPU_METRICS)
    result = subprocess.run([nvidia_smi, f"--query-gpu={query}", "--format=csv,nounits,noheader",
                             f"--id={gpu_id}"], encoding="utf-8", capture_output=True, check=True)

    def as_float(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return 0.0

    values = [as_float(x) for x in result.stdout.strip().split(", ")]
    return {f"{name} ({unit})": value for (name, unit), value in zip(_GPU_METRICS, values,
                                                                      strict=False)}


def get_mps_stats() -> dict[str, float]:
    """Host RAM, CPU and swap use in percent under Lightning's MPS key names
    (``M1_vm_percent``...); needs ``psutil``."""
    if not psutil_available():
        raise MissingDependencyError("Fetching MPS device stats requires `psutil` to be "
                                     "installed: pip install psutil", name="psutil")
    import psutil

    return {"M1_vm_percent": psutil.virtual_memory().percent,
            "M1_percent": psutil.cpu_percent(),
            "M1_swap_percent": psutil.swap_memory().percent}
