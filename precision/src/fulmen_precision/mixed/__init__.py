"""The ``16-mixed`` and ``bf16-mixed`` precision plugins: autocast, float32 weights."""

from fulmen import PrecisionSpec, hookimpl

#: The plugin's records, one per dtype: ``MixedPrecision`` names an instance from them (one source
#: for each name).
RECORDS = (
    PrecisionSpec(
        name="16-mixed",
        deprecated_aliases=["16"],
        target="fulmen_precision.mixed.precision:MixedPrecision",
        init_kwargs={"dtype": "float16"},
        description="autocast to float16 with loss scaling (GradScaler); float32 weights",
    ),
    PrecisionSpec(
        name="bf16-mixed",
        deprecated_aliases=["bf16"],
        target="fulmen_precision.mixed.precision:MixedPrecision",
        init_kwargs={"dtype": "bfloat16"},
        description="autocast to bfloat16; float32 weights, no loss scaling needed",
    ),
)


@hookimpl
def fulmen_precisions():
    yield from RECORDS
