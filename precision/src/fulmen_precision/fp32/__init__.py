"""The ``32-true`` precision plugin: full float32, the default."""

from fulmen import PrecisionSpec, hookimpl


@hookimpl
def fulmen_precisions():
    yield PrecisionSpec(
        name="32-true",
        deprecated_aliases=["32"],
        target="fulmen_precision.fp32.precision:Precision32",
        description="float32 parameters and computation (default)",
    )
