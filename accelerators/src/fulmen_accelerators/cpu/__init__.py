"""The ``cpu`` accelerator plugin: always available, answers ``accelerator="auto"`` last."""

from fulmen import AcceleratorSpec, hookimpl


@hookimpl
def fulmen_accelerators():
    yield AcceleratorSpec(
        name="cpu",
        target="fulmen_accelerators.cpu.accelerator:CPUAccelerator",
        device_type="cpu",
        distributed_backend="gloo",
        description="CPU; devices is the number of processes",
    )


@hookimpl(trylast=True)
def fulmen_detect_accelerator():
    return "cpu"
