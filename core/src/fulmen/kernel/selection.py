"""What Trainer and Lite share: turning their arguments into a Selection, and reporting it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fulmen.api.launcher import LaunchOwner
from fulmen.errors import ConfigurationError
from fulmen.kernel.compose import Selection, compose
from fulmen.kernel.legacy import translate_selection
from fulmen.kernel.manager import get_plugin_manager

if TYPE_CHECKING:
    from fulmen.api import Accelerator, ClusterEnvironment, Launcher, Precision, Strategy
    from fulmen.api.notice import PreemptionNotice


def select(owner: str, *, accelerator: Any, strategy: Any, devices: Any, num_nodes: Any,
           precision: Any, plugins: Sequence[Any] | Any | None, gpus: Any = None,
           tpu_cores: Any = None) -> Selection:
    """Translate legacy spellings, then compose."""
    catalog = get_plugin_manager().catalog()
    accelerator, strategy, devices = translate_selection(
        owner, catalog, accelerator=accelerator, strategy=strategy, devices=devices, gpus=gpus,
        tpu_cores=tpu_cores)
    if plugins is not None and not isinstance(plugins, list | tuple):
        plugins = [plugins]
    try:
        return compose(accelerator=accelerator, strategy=strategy, devices=devices,
                       num_nodes=num_nodes, precision=precision, plugins=plugins)
    except ConfigurationError as exc:
        legacy = [f"{flag}={value!r}" for flag, value in (("gpus", gpus), ("tpu_cores", tpu_cores))
                  if value is not None]
        if not legacy:
            raise
        raise ConfigurationError(f"{owner}({', '.join(legacy)}) was read as accelerator="
                                 f"{accelerator!r}, devices={devices!r}: {exc}") from None


class SelectionReport(LaunchOwner):
    """Read-only view of the composed selection (``trainer.strategy``, ``.world_size``...);
    a ``LaunchOwner`` that hands nothing back unless the subclass says what."""

    _selection: Selection

    @property
    def strategy(self) -> Strategy:
        return self._selection.strategy

    @property
    def accelerator(self) -> Accelerator:
        return self._selection.accelerator

    @property
    def precision_plugin(self) -> Precision:
        return self._selection.precision

    @property
    def cluster_environment(self) -> ClusterEnvironment:
        return self._selection.environment

    @property
    def preemption_notices(self) -> tuple[PreemptionNotice, ...]:
        """The stop-notice sources passed in ``plugins=[...]`` (the cluster environment's own
        come from ``cluster_environment.preemption_notices()``)."""
        return self._selection.notices

    @property
    def launcher(self) -> Launcher | None:
        return self._selection.launcher

    @property
    def num_devices(self) -> int:
        return self._selection.num_devices

    @property
    def device_ids(self) -> list[int]:
        return list(self._selection.device_ids)

    @property
    def num_nodes(self) -> int:
        return self._selection.num_nodes

    @property
    def world_size(self) -> int:
        return self.strategy.world_size

    @property
    def global_rank(self) -> int:
        return self.strategy.global_rank

    @property
    def local_rank(self) -> int:
        return self.strategy.local_rank

    @property
    def node_rank(self) -> int:
        return self.strategy.node_rank

    @property
    def is_global_zero(self) -> bool:
        return self.strategy.is_global_zero
