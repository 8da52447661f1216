"""The ``16-true`` and ``bf16-true`` precision plugins: parameters stored in half precision."""

from fulmen import PrecisionSpec, hookimpl

#: The plugin's records, one per dtype: ``HalfPrecision`` names an instance from them (one source
#: for each name).
RECORDS = tuple(
    PrecisionSpec(
        name=name,
        target="fulmen_precision.half.precision:HalfPrecision",
        init_kwargs={"dtype": dtype},
        description=f"{dtype} parameters and computation (half the memory, less accuracy)",
    )
    for name, dtype in (("16-true", "float16"), ("bf16-true", "bfloat16"))
)


@hookimpl
def fulmen_precisions():
    yield from RECORDS
