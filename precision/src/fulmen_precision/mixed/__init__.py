"""The ``16-mixed`` and ``bf16-mixed`` precision plugins: autocast, float32 weights."""

from fulmen import PrecisionSpec, hookimpl


@hookimpl
def fulmen_precisions():
    yield PrecisionSpec(
        name="16-mixed",
        deprecated_aliases=["16"],
        target="fulmen_precision.mixed.precision:MixedPrecision",
        init_kwargs={"dtype": "float16"},
        description="autocast to float16 with loss scaling (GradScaler); float32 weights",
    )
    yield PrecisionSpec(
        name="bf16-mixed",
        deprecated_aliases=["bf16"],
        target="fulmen_precision.mixed.precision:MixedPrecision",
        init_kwargs={"dtype": "bfloat16"},
        description="autocast to bfloat16; float32 weights, no loss scaling needed",
    )
