"""The ``64-true`` precision plugin: float64 parameters and inputs."""

from fulmen import PrecisionSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = PrecisionSpec(
    name="64-true",
    deprecated_aliases=["64"],
    target="fulmen_precision.fp64.precision:Precision64",
    accelerators=["cpu", "cuda"],
    description="float64 parameters, inputs and computation (not on MPS)",
)


@hookimpl
def fulmen_precisions():
    yield SPEC
