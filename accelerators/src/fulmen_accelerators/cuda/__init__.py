"""The ``cuda`` accelerator plugin (alias ``gpu``): answers ``accelerator="auto"`` when a GPU
is present."""

from fulmen import hookimpl
from fulmen_accelerators.cuda.record import SPEC


@hookimpl
def fulmen_accelerators():
    yield SPEC


@hookimpl
def fulmen_detect_accelerator():
    from fulmen_accelerators.cuda.accelerator import CUDAAccelerator

    return "cuda" if CUDAAccelerator.is_available() else None
