"""The ``mps`` accelerator plugin: Apple-silicon GPUs through Metal."""

from fulmen import hookimpl
from fulmen_accelerators.mps.record import SPEC


@hookimpl
def fulmen_accelerators():
    yield SPEC


@hookimpl
def fulmen_detect_accelerator():
    import platform

    if platform.system() != "Darwin" or platform.machine() != "arm64":
        return None
    from fulmen_accelerators.mps.accelerator import MPSAccelerator

    return "mps" if MPSAccelerator.is_available() else None
