"""float32 everywhere: the base class's behaviour, under its registered name."""

from fulmen import Precision


class Precision32(Precision):
    """Full float32 precision."""

    name = "32-true"
