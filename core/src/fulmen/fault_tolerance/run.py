"""``TrainingRun``: what preemption and lost-work accounting read from the object that runs
training (the ``Trainer``; Lite's :class:`fulmen.lite_preemption.LitePreemption`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fulmen.api import ClusterEnvironment, Strategy
    from fulmen.api.logger import Logger
    from fulmen.api.notice import PreemptionNotice


class TrainingRun(Protocol):
    """A run's progress and its plugins, read-only.

    ``global_step``: optimizer steps done (the step boundaries passed); ``current_epoch``: the
    epoch (0 when the loop has none); ``preemption_notices``: the stop-notice sources passed in
    ``plugins=[...]`` (the cluster environment's own come from
    ``cluster_environment.preemption_notices()``); ``loggers``: where resumes are reported."""

    @property
    def strategy(self) -> Strategy: ...

    @property
    def cluster_environment(self) -> ClusterEnvironment: ...

    @property
    def preemption_notices(self) -> Sequence[PreemptionNotice]: ...

    @property
    def is_global_zero(self) -> bool: ...

    @property
    def local_rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    @property
    def global_step(self) -> int: ...

    @property
    def current_epoch(self) -> int: ...

    @property
    def loggers(self) -> Sequence[Logger]: ...
