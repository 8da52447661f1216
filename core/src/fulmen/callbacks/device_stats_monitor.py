"""``DeviceStatsMonitor``: the accelerator's device statistics (and the host's) to the loggers."""

from __future__ import annotations

from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.device_stats import get_cpu_stats, psutil_available
from fulmen.utilities.rank_zero import rank_zero_warn


class DeviceStatsMonitor(Callback):
    """Logs ``Accelerator.get_device_stats`` around every training, validation and test batch
    whose metrics are logged (``trainer.should_update_logs``), as
    ``DeviceStatsMonitor.<hook>/<stat>`` — on the CPU ``cpu_percent``, ``cpu_vm_percent`` and
    ``cpu_swap_percent`` (through ``psutil``, which must be installed); on CUDA
    ``torch.cuda.memory_stats`` (``allocated_bytes.all.current``, ``reserved_bytes.all.peak``,
    ``num_ooms``...). Rank zero's device is the one logged (loggers write from rank zero), and
    the other ranks read nothing.

    Args:
        cpu_stats: None logs host statistics only when the accelerator is the CPU; True adds
            them on any accelerator; False never logs them.
        filter_keys: log only these statistics (names before the prefix, e.g.
            ``"cpu_percent"``); a name no statistic has is warned about at set-up.
    """

    def __init__(self, cpu_stats: bool | None = None, filter_keys: set[str] | None = None) -> None:
        self._cpu_stats = cpu_stats
        self._filter_keys = filter_keys

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if stage != "fit":
            return
        if not trainer.loggers:
            raise ConfigurationError("Cannot use `DeviceStatsMonitor` callback with "
                                     "`Trainer(logger=False)`: give the Trainer a logger "
                                     "(logger=True, CSVLogger(...)), or drop the callback")
        device = trainer.strategy.root_device
        if self._cpu_stats is None and device.type == "cpu" and not psutil_available():
            raise ConfigurationError("`DeviceStatsMonitor` cannot log CPU stats as `psutil` is "
                                     "not installed: pip install psutil, or pass "
                                     "DeviceStatsMonitor(cpu_stats=False)")
        if self._filter_keys is not None:
            unknown = self._filter_keys - self._stats(trainer).keys()
            if unknown:
                rank_zero_warn("`DeviceStatsMonitor` filter_keys contains keys not found in "
                               f"device stats and will be ignored: {unknown}")

    def _stats(self, trainer: Any) -> dict[str, float]:
        device = trainer.strategy.root_device
        stats = dict(trainer.accelerator.get_device_stats(device))
        if self._cpu_stats and device.type != "cpu":  # on the CPU they are the device's
            stats.update(get_cpu_stats())
        return stats

    def _log(self, trainer: Any, hook: str) -> None:
        if not (trainer.is_global_zero and trainer.should_update_logs):
            return
        if self._cpu_stats is False and trainer.strategy.root_device.type == "cpu":
            return
        stats = self._stats(trainer)
        if self._filter_keys is not None:
            stats = {k: v for k, v in stats.items() if k in self._filter_keys}
        prefix = f"{type(self).__qualname__}.{hook}/"
        trainer.logger_set.log_metrics({prefix + k: v for k, v in stats.items()},
                                       trainer.batches_that_stepped)

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int) -> None:
        self._log(trainer, "on_train_batch_start")

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._log(trainer, "on_train_batch_end")

    def on_validation_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                                  dataloader_idx: int = 0) -> None:
        self._log(trainer, "on_validation_batch_start")

    def on_validation_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        self._log(trainer, "on_validation_batch_end")

    def on_test_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                            dataloader_idx: int = 0) -> None:
        self._log(trainer, "on_test_batch_start")

    def on_test_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        self._log(trainer, "on_test_batch_end")
