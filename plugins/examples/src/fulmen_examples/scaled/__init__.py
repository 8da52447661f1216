"""The ``scaled`` precision plugin: ``precision="32-scaled"``."""

from fulmen import PrecisionSpec, hookimpl


@hookimpl
def fulmen_precisions():
    yield PrecisionSpec(name="32-scaled",
                        target="fulmen_examples.scaled.precision:StaticScalePrecision",
                        description="float32 with a static loss scale")
