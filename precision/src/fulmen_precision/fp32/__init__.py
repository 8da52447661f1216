"""The ``32-true`` precision plugin: full float32, the default."""

from fulmen import PrecisionSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = PrecisionSpec(
    name="32-true",
    deprecated_aliases=["32"],
    target="fulmen_precision.fp32.precision:Precision32",
    description="float32 parameters and computation (default)",
)


@hookimpl
def fulmen_precisions():
    yield SPEC
