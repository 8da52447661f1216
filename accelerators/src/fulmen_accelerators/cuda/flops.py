"""Peak FLOPs per NVIDIA chip and dtype (datasheet figures, as Lightning's table), and the
chip name parsing that picks a row. Used by ``CUDAAccelerator.get_available_flops``."""

from __future__ import annotations

import warnings

import torch

# Figures and sources as in Lightning's lightning/fabric/utilities/throughput.py (Apache-2.0).
CUDA_FLOPS: dict[str, dict[str | torch.dtype, float]] = {
    # Hopper
    # source: https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446
    "h200 sxm1": {
        torch.float64: 3.4e13,
        torch.float32: 6.7e13,
        "tfloat32": 4.945e14,
        torch.bfloat16: 9.895e14,
        torch.float16: 9.895e14,
        torch.int8: 1.979e15,
    },
    "h200 nvl1": {
        torch.float64: 3.0e13,
        torch.float32: 6.0e13,
        "tfloat32": 4.2e14,
        torch.bfloat16: 8.4e14,
        torch.float16: 8.4e14,
        torch.int8: 1.68e15,
    },
    # source: https://resources.nvidia.com/en-us-gpu-resources/h100-datasheet-24306
    "h100 nvl": {
        torch.float64: 3.0e13,
        torch.float32: 6.0e13,
        "tfloat32": 4.175e14,
        torch.bfloat16: 8.355e14,
        torch.float16: 8.355e14,
        torch.int8: 1.6705e15,
    },
    "h100 sxm": {
        torch.float64: 3.4e13,
        torch.float32: 6.7e13,
        "tfloat32": 4.945e14,
        torch.bfloat16: 9.895e14,
        torch.float16: 9.895e14,
        torch.int8: 1.979e15,
    },
    "h100 pcie": {
        torch.float64: 2.56e13,
        torch.float32: 5.12e13,
        "tfloat32": 3.78e14,
        torch.bfloat16: 7.56e14,
        torch.float16: 7.56e14,
        torch.int8: 1.513e15,
    },
    # Ada
    # source: https://images.nvidia.com/aem-dam/Solutions/Data-Center/l4/nvidia-ada-gpu-architecture-whitepaper-v2.1.pdf
    "rtx 4090": {
        torch.float32: 8.26e13,
        "tfloat32": 8.26e13,
        torch.bfloat16: 8.26e13,
        torch.float16: 8.26e13,
        torch.int8: 6.606e14,
        "int4": 1.3212e15,
    },
    "rtx 4080": {
        torch.float32: 4.87e13,
        "tfloat32": 4.87e13,
        torch.bfloat16: 4.87e13,
        torch.float16: 4.87e13,
        torch.int8: 3.899e14,
        "int4": 7.798e14,
    },
    "rtx 4080 super": {
        torch.float32: 5.22e13,
        "tfloat32": 5.22e13,
        torch.bfloat16: 5.22e13,
        torch.float16: 5.22e13,
        torch.int8: 4.176e14,
        "int4": 8.352e14,
    },
    "l4": {
        torch.float32: 3.03e13,
        "tfloat32": 6.0e13,
        torch.bfloat16: 1.21e14,
        torch.float16: 1.21e14,
        torch.int8: 2.42e14,
        "int4": 4.84e14,
    },
    "l40": {
        torch.float32: 9.05e13,
        "tfloat32": 9.05e13,
        torch.bfloat16: 1.81e14,
        torch.float16: 1.81e14,
        torch.int8: 3.62e14,
        "int4": 7.24e14,
    },
    # Ampere
    # source: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
    # sxm and pcie have same flop counts
    "a100": {
        torch.float64: 9.7e12,
        torch.float32: 1.95e13,
        "tfloat32": 1.56e14,
        torch.bfloat16: 3.12e14,
        torch.float16: 3.12e14,
        torch.int8: 6.24e14,
    },
    "a6000": {
        torch.float32: 3.87e13,
        "tfloat32": 7.74e13,
        torch.bfloat16: 3.87e13,
        torch.float16: 3.87e13,
        torch.int8: 3.097e14,
        "int4": 6.193e14,
    },
    # source: https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf
    "a40": {
        torch.float32: 3.74e13,
        "tfloat32": 7.48e13,
        torch.bfloat16: 1.497e14,
        torch.float16: 1.497e14,
        torch.int8: 2.993e14,
        "int4": 5.987e14,
    },
    # source: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf
    "a10g": {
        torch.float32: 3.12e13,
        "tfloat32": 6.25e13,
        torch.bfloat16: 1.25e14,
        torch.float16: 1.25e14,
        torch.int8: 2.5e14,
        "int4": 5.0e14,
    },
    "rtx 3090 ti": {
        torch.float32: 4.0e13,
        "tfloat32": 4.0e13,
        torch.bfloat16: 4.0e13,
        torch.float16: 4.0e13,
        torch.int8: 3.2e14,
        "int4": 6.4e14,
    },
    "rtx 3090": {
        torch.float32: 3.56e13,
        "tfloat32": 3.56e13,
        torch.bfloat16: 3.56e13,
        torch.float16: 3.56e13,
        torch.int8: 2.84e14,
        "int4": 5.68e14,
    },
    "rtx 3080 ti": {
        torch.float32: 3.41e13,
        "tfloat32": 3.41e13,
        torch.bfloat16: 3.41e13,
        torch.float16: 3.41e13,
        torch.int8: 2.728e14,
        "int4": 5.466e14,
    },
    # source: https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
    "rtx 3080": {
        torch.float32: 2.98e13,
        "tfloat32": 2.98e13,
        torch.bfloat16: 2.98e13,
        torch.float16: 2.98e13,
        torch.int8: 2.38e14,
        "int4": 4.76e14,
    },
    "rtx 3070": {
        torch.float32: 2.03e13,
        "tfloat32": 2.03e13,
        torch.bfloat16: 2.03e13,
        torch.float16: 2.03e13,
        torch.int8: 1.626e14,
        "int4": 3.252e14,
    },
    # Turing
    # source: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf
    # sxm and pcie have same flop counts
    "t4": {
        torch.float32: 8.1e12,
        torch.float16: 6.5e13,
        torch.int8: 1.3e14,
        "int4": 2.6e14,
    },
    # https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/quadro-rtx-5000-data-sheet-us-nvidia-704120-r4-web.pdf
    "quadro rtx 5000": {
        torch.float32: 1.12e13,
        torch.float16: 8.92e13,
    },
    "rtx 2080 super": {
        torch.float32: 1.12e13,
        torch.float16: 2.23e13,
        torch.int8: 1.784e14,
        "int4": 3.568e14,
    },
    "rtx 2080 ti": {
        torch.float32: 1.42e13,
        torch.float16: 2.85e13,
        torch.int8: 2.277e14,
        "int4": 4.554e14,
    },
    "rtx 2080": {
        torch.float32: 1.06e13,
        torch.float16: 2.12e13,
        torch.int8: 1.696e14,
        "int4": 3.391e14,
    },
    # https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
    "rtx 2070 super": {
        torch.float32: 9.1e12,
        torch.float16: 1.81e13,
        torch.int8: 1.45e14,
        "int4": 2.9e14,
    },
    "titan rtx": {
        torch.float32: 1.63e13,
        torch.float16: 3.26e13,
        torch.int8: 2.61e14,
        "int4": 5.22e14,
    },
    # Volta
    # source: https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
    "v100 sxm": {
        torch.float64: 7.8e12,
        torch.float32: 1.57e13,
        torch.float16: 1.25e14,
    },
    "v100 pcie": {
        torch.float64: 7.0e12,
        torch.float32: 1.4e13,
        torch.float16: 1.12e14,
    },
    "v100s pcie": {
        torch.float64: 8.2e12,
        torch.float32: 1.64e13,
        torch.float16: 1.3e14,
    },
}


# (substring of the lower-case device name, row) in the order they are tried; more specific
# names first. "geforce rtx" is parsed separately (the model number is the fourth word).
_NAMES: tuple[tuple[str, str], ...] = (
    ("a6000", "a6000"), ("a100", "a100"), ("a40", "a40"), ("a10g", "a10g"), ("t4", "t4"),
    ("quadro rtx 5000", "quadro rtx 5000"), ("titan rtx", "titan rtx"),
    ("v100-sxm", "v100 sxm"), ("v100-pcie", "v100 pcie"), ("v100s-pcie", "v100s pcie"),
)


def chip_of(device_name: str) -> str | None:
    """The table row for a ``torch.cuda.get_device_name`` string, or None if unknown."""
    chip = device_name.lower()
    if "h200" in chip:
        return "h200 sxm1" if "sxm1" in chip else "h200 nvl1" if "nvl1" in chip else chip
    if "h100" in chip:
        if "hbm3" in chip:
            return "h100 sxm"
        if "nvl" in chip:
            return "h100 nvl"
        return "h100 pcie" if "pcie" in chip or "hbm2e" in chip else chip
    if "l4" in chip:
        return "l40" if "tesla" in chip else "l4"
    if "geforce rtx" in chip:
        number = chip.split(" ")[3]
        extra = " super" if "super" in chip else " ti" if "ti" in chip else ""
        return f"rtx {number}{extra}"
    return next((row for key, row in _NAMES if key in chip), None)


def available_flops(device_name: str, dtype: torch.dtype | str,
                    ampere_or_later: bool) -> int | None:
    """Peak FLOPs of one device named ``device_name`` for ``dtype``; None (with a warning saying
    what is missing) when the chip or the dtype is not in the table."""
    chip = chip_of(device_name)
    if chip is None or chip not in CUDA_FLOPS:
        warnings.warn(f"FLOPs not found for {device_name!r}" + (f", chip is {chip!r}" if chip
                                                                 else ""), stacklevel=3)
        return None
    flops = CUDA_FLOPS[chip]
    if dtype is torch.float32 and ampere_or_later and \
            torch.get_float32_matmul_precision() != "highest":
        dtype = "tfloat32"
    if dtype not in flops:
        warnings.warn(f"{device_name!r} does not support {dtype}", stacklevel=3)
        return None
    return int(flops[dtype])
