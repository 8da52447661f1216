"""float32 everywhere: the base class's behaviour, under its registered name."""

from fulmen import Precision
from fulmen_precision.fp32 import SPEC


class Precision32(Precision):
    """Full float32 precision."""

    name = SPEC.name  # the registered name, from the plugin's record
