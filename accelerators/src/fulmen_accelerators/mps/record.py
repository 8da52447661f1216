"""The ``mps`` accelerator's record, in a module of its own: the plugin's hook yields it and
:class:`~fulmen_accelerators.mps.accelerator.MPSAccelerator` reads its name from it (one
source), while the hook imports the class to detect the device."""

from fulmen import AcceleratorSpec

SPEC = AcceleratorSpec(
    name="mps",
    target="fulmen_accelerators.mps.accelerator:MPSAccelerator",
    device_type="mps",
    description="Apple-silicon GPU through Metal Performance Shaders (one device)",
)
