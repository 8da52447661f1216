"""The ``cpu`` accelerator plugin: always available, answers ``accelerator="auto"`` last."""

from fulmen import AcceleratorSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = AcceleratorSpec(
    name="cpu",
    target="fulmen_accelerators.cpu.accelerator:CPUAccelerator",
    device_type="cpu",
    distributed_backend="gloo",
    description="CPU; devices is the number of processes",
)


@hookimpl
def fulmen_accelerators():
    yield SPEC


@hookimpl(trylast=True)
def fulmen_detect_accelerator():
    return "cpu"
