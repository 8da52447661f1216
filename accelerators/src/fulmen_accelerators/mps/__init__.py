"""The ``mps`` accelerator plugin: Apple-silicon GPUs through Metal."""

from fulmen import AcceleratorSpec, hookimpl


@hookimpl
def fulmen_accelerators():
    yield AcceleratorSpec(
        name="mps",
        target="fulmen_accelerators.mps.accelerator:MPSAccelerator",
        device_type="mps",
        description="Apple-silicon GPU through Metal Performance Shaders (one device)",
    )


@hookimpl
def fulmen_detect_accelerator():
    import platform

    if platform.system() != "Darwin" or platform.machine() != "arm64":
        return None
    from fulmen_accelerators.mps.accelerator import MPSAccelerator

    return "mps" if MPSAccelerator.is_available() else None
