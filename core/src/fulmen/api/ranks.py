"""``Ranks``: where this process is in the run, as the Trainer and Lite both say it."""

from __future__ import annotations

from typing import Protocol


class Ranks(Protocol):
    """The rank members a ``Module`` reads from whatever runs it (``TrainerView``,
    ``LiteView``)."""

    @property
    def global_rank(self) -> int:
        ...

    @property
    def local_rank(self) -> int:
        ...

    @property
    def world_size(self) -> int:
        ...
