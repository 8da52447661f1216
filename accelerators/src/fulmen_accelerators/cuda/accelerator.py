"""CUDA accelerator: NVIDIA GPUs. ``devices`` follows the table of the GPU guide."""

from __future__ import annotations

import torch

from fulmen import Accelerator
from fulmen_accelerators.cuda.record import SPEC


class CUDAAccelerator(Accelerator):
    """One process per GPU (with a distributed strategy); the current device is set per process."""

    name = SPEC.name  # the registered name, from the plugin's record
    device_type = "cuda"

    @classmethod
    def is_available(cls) -> bool:
        return cls.auto_device_count() > 0

    @classmethod
    def auto_device_count(cls) -> int:
        # device_count() uses NVML where it can and does not initialise CUDA (fork stays safe).
        return torch.cuda.device_count()

    @classmethod
    def availability_note(cls) -> str:
        if torch.version.cuda is None:
            return f"torch {torch.__version__} is a CPU-only build"
        return f"torch.cuda.device_count() is 0 (CUDA_VISIBLE_DEVICES={_visible()!r})"

    def setup_device(self, device: torch.device) -> None:
        torch.cuda.set_device(device)

    def teardown(self) -> None:
        torch.cuda.empty_cache()

    def get_device_stats(self, device: torch.device) -> dict[str, float]:
        """``torch.cuda.memory_stats(device)``: the caching allocator's counters (bytes)."""
        return {k: float(v) for k, v in torch.cuda.memory_stats(device).items()}

    @classmethod
    def get_available_flops(cls, device: torch.device, dtype: torch.dtype | str) -> int | None:
        """Datasheet peak FLOPs of the chip for ``dtype`` (float32 counts as TF32 on Ampere and
        later unless ``torch.get_float32_matmul_precision()`` is ``"highest"``)."""
        from fulmen_accelerators.cuda.flops import available_flops

        return available_flops(torch.cuda.get_device_name(device), dtype,
                               torch.cuda.get_device_capability(device) >= (8, 0))


def _visible() -> str | None:
    import os

    return os.environ.get("CUDA_VISIBLE_DEVICES")
