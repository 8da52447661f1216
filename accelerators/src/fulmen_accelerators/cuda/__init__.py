"""The ``cuda`` accelerator plugin (alias ``gpu``): answers ``accelerator="auto"`` when a GPU
is present."""

from fulmen import AcceleratorSpec, hookimpl


@hookimpl
def fulmen_accelerators():
    yield AcceleratorSpec(
        name="cuda",
        aliases=["gpu"],
        target="fulmen_accelerators.cuda.accelerator:CUDAAccelerator",
        device_type="cuda",
        distributed_backend="nccl",
        description="NVIDIA GPUs through CUDA; devices selects GPUs (count, indices, -1)",
    )


@hookimpl
def fulmen_detect_accelerator():
    from fulmen_accelerators.cuda.accelerator import CUDAAccelerator

    return "cuda" if CUDAAccelerator.is_available() else None
