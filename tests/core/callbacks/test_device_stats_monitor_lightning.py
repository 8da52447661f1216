"""Lightning's ``tests_pytorch/callbacks/test_device_stats_monitor.py``, ported to fulmen.

Deliberate differences:
- Statistics come from the accelerator plugin's public ``get_device_stats(device)``; Lightning
  patches ``get_cpu_stats`` to count calls, here a small CPU accelerator plugin counts them.
- Logging without ``psutil`` is not ported: psutil is installed here and faking its absence
  would mean patching internals; the error is a ``ConfigurationError`` naming
  ``pip install psutil`` and ``cpu_stats=False``.
- The statistics of a batch's start and end reach a logger in one call with the step's values
  (the logger contract: a step's values in one call), so a filter sees 2 calls (Lightning: 4).
- The CUDA and TPU tests are not ported (no such device here); CUDA's statistics are
  ``torch.cuda.memory_stats``.
"""

from __future__ import annotations

import csv
import re

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import DeviceStatsMonitor
from fulmen.loggers import CSVLogger
from fulmen.utilities.device_stats import CPU_PERCENT, CPU_SWAP_PERCENT, CPU_VM_PERCENT
from fulmen_accelerators import CPUAccelerator

pytest.importorskip("psutil")
CPU_METRIC_KEYS = (CPU_VM_PERCENT, CPU_SWAP_PERCENT, CPU_PERCENT)


class CountingCPU(CPUAccelerator):
    calls = 0

    def get_device_stats(self, device: torch.device) -> dict[str, float]:
        type(self).calls += 1
        return super().get_device_stats(device)


def _trainer(tmp_path, callbacks, logger, **kwargs):
    kwargs = {"max_epochs": 1, "limit_train_batches": 2, "limit_val_batches": 0,
              "log_every_n_steps": 1, "enable_checkpointing": False,
              "enable_progress_bar": False, "enable_model_summary": False,
              "default_root_dir": tmp_path, **kwargs}
    return fulmen.Trainer(callbacks=callbacks, logger=logger, **kwargs)


@pytest.mark.parametrize("cpu_stats", [None, True, False])
def test_device_stats_cpu(tmp_path, cpu_stats):
    seen = []

    class DebugLogger(CSVLogger):
        def log_metrics(self, metrics, step):
            seen.append(metrics)
            enabled = cpu_stats is not False
            for key in CPU_METRIC_KEYS:
                has = any(key in name for name in metrics)
                assert has if enabled else not has

    CountingCPU.calls = 0
    _trainer(tmp_path, DeviceStatsMonitor(cpu_stats=cpu_stats), DebugLogger(tmp_path),
             accelerator=CountingCPU()).fit(BoringModel())
    expected = 4 if cpu_stats is not False else 0  # (batch start + batch end) x 2 batches
    assert CountingCPU.calls == expected
    assert any("DeviceStatsMonitor.on_train_batch_start/" in k for m in seen for k in m) == \
        (cpu_stats is not False)


def test_device_stats_monitor_no_logger(tmp_path):
    trainer = _trainer(tmp_path, DeviceStatsMonitor(), False)
    with pytest.raises(ConfigurationError, match="Cannot use `DeviceStatsMonitor` callback"):
        trainer.fit(BoringModel())


def test_device_stats_monitor_logs_for_different_stages(tmp_path):
    model = BoringModel()
    trainer = _trainer(tmp_path, DeviceStatsMonitor(), CSVLogger(tmp_path), limit_train_batches=4,
                       limit_val_batches=4, limit_test_batches=1, accelerator="cpu", devices=1)
    trainer.fit(model)
    path = trainer.logger.metrics_file_path
    with open(path) as handle:
        header = next(csv.reader(handle))
    assert any(re.match(r".+on_train_batch", h) for h in header)
    assert any(re.match(r".+on_validation_batch", h) for h in header)
    trainer.test(model)
    with open(path) as handle:
        header = next(csv.reader(handle))
    assert any(re.match(r".+on_test_batch", h) for h in header)


@pytest.mark.parametrize(("filter_keys", "present", "absent"), [
    ({CPU_VM_PERCENT, CPU_PERCENT}, [CPU_VM_PERCENT, CPU_PERCENT], [CPU_SWAP_PERCENT]),
    ({CPU_PERCENT}, [CPU_PERCENT], [CPU_VM_PERCENT, CPU_SWAP_PERCENT]),
])
def test_device_stats_monitor_filter_keys(tmp_path, filter_keys, present, absent):
    calls = []

    class AssertFilterLogger(CSVLogger):
        def log_metrics(self, metrics, step):
            if not any("DeviceStatsMonitor" in k for k in metrics):
                return
            calls.append(metrics)
            for key in present:
                assert any(key in k for k in metrics)
            for key in absent:
                assert not any(key in k for k in metrics)

    _trainer(tmp_path, DeviceStatsMonitor(cpu_stats=True, filter_keys=filter_keys),
             AssertFilterLogger(tmp_path)).fit(BoringModel())
    assert len(calls) == 2  # Lightning: 4 (batch start and end each make a call)


def test_device_stats_monitor_filter_keys_unrecognized_warns(tmp_path):
    monitor = DeviceStatsMonitor(cpu_stats=True, filter_keys={"nonexistent_key_xyz"})
    with pytest.warns(UserWarning, match="nonexistent_key_xyz"):
        _trainer(tmp_path, monitor, CSVLogger(tmp_path)).fit(BoringModel())


def test_device_stats_follow_log_every_n_steps(tmp_path):
    """Only batches whose metrics are logged read the statistics (no per-step cost else)."""
    CountingCPU.calls = 0
    _trainer(tmp_path, DeviceStatsMonitor(), CSVLogger(tmp_path), accelerator=CountingCPU(),
             limit_train_batches=6, log_every_n_steps=3).fit(BoringModel())
    assert CountingCPU.calls == 4  # batches 3 and 6, start and end
