"""The ``cuda`` accelerator's record, in a module of its own: the plugin's hook yields it and
:class:`~fulmen_accelerators.cuda.accelerator.CUDAAccelerator` reads its name from it (one
source), while the hook imports the class to detect the device."""

from fulmen import AcceleratorSpec

SPEC = AcceleratorSpec(
    name="cuda",
    aliases=["gpu"],
    target="fulmen_accelerators.cuda.accelerator:CUDAAccelerator",
    device_type="cuda",
    distributed_backend="nccl",
    description="NVIDIA GPUs through CUDA; devices selects GPUs (count, indices, -1)",
)
