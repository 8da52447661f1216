"""Lightning's ``tests_fabric/utilities/test_throughput.py`` (CPU parts) and
``tests_pytorch/callbacks/test_throughput_monitor.py``, ported to fulmen.

Deliberate differences:
- The peak-FLOPs table belongs to the cuda accelerator plugin
  (``CUDAAccelerator.get_available_flops``); its name parsing is tested on the plugin's pure
  function ``available_flops(device_name, dtype, ampere_or_later)`` instead of patching
  ``torch.cuda.get_device_name``. The TPU cases are not ported (no XLA plugin).
- A known peak is given by a small fake accelerator plugin (a CPU accelerator declaring 100
  FLOPs/s), not by patching ``get_available_flops``; loggers are small recording loggers.
- Lightning fakes ``time.perf_counter`` to compare exact rates; here the clock is real, so the
  Trainer tests check counts exactly and rates by their relations (samples/s = 3 x batches/s,
  MFU = FLOPs/s / peak).
- fulmen logs training figures at ``trainer.global_step`` (optimizer steps done: 1 after the
  first step), the step axis of fulmen's own metrics; Lightning logs the first at step 0.
- Wrong ``Throughput`` arguments raise ``ConfigurationError`` (Lightning: ``AssertionError``).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import ThroughputMonitor
from fulmen.loggers.base import Logger
from fulmen.utilities.throughput import (
    MonotonicWindow,
    Throughput,
    get_available_flops,
    measure_flops,
)
from fulmen.utilities.throughput import ThroughputMonitor as LiteThroughputMonitor
from fulmen_accelerators import CPUAccelerator
from fulmen_accelerators.cuda.flops import available_flops


class RecordingLogger(Logger):
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, float], int]] = []

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.calls.append((dict(metrics), step))

    def log_hyperparams(self, params: dict) -> None:
        pass


class PeakCPU(CPUAccelerator):
    """A CPU whose peak is known: 100 FLOPs/s in every dtype."""

    @classmethod
    def get_available_flops(cls, device: torch.device, dtype: torch.dtype | str) -> int | None:
        return 100


def test_measure_flops():
    with torch.device("meta"):
        model = BoringModel()
        x = torch.randn(2, 32)
    fwd_flops = measure_flops(model, lambda: model(x))
    assert isinstance(fwd_flops, int)
    fwd_and_bwd_flops = measure_flops(model, lambda: model(x), lambda y: y.sum())
    assert isinstance(fwd_and_bwd_flops, int)
    assert fwd_flops < fwd_and_bwd_flops


def test_get_available_flops():
    assert available_flops("NVIDIA H100 PCIe", torch.bfloat16, False) == 756e12
    with pytest.warns(match="not found for 'CocoNut"):
        assert available_flops("CocoNut", torch.bfloat16, False) is None
    with pytest.warns(match="t4' does not support torch.bfloat"):
        assert available_flops("t4", torch.bfloat16, False) is None
    # the CPU declares no peak; the lookup goes through the accelerator plugin of device.type
    assert get_available_flops(torch.device("cpu"), torch.float32) is None
    assert get_available_flops(torch.device("cpu"), torch.float32, PeakCPU) == 100


@pytest.mark.parametrize("device_name", [
    "NVIDIA H200 SXM1", "NVIDIA H200 NVL1", "h100-nvl", "h100-hbm3", "NVIDIA H100 PCIe",
    "h100-hbm2e", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4080", "Tesla L40", "NVIDIA L4",
    "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA GeForce RTX 3090",
    "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 3080", "NVIDIA GeForce RTX 3080 Ti",
    "NVIDIA GeForce RTX 3070",
    pytest.param("NVIDIA GeForce RTX 3070 Ti", marks=pytest.mark.xfail(raises=AssertionError)),
    pytest.param("NVIDIA GeForce RTX 3060", marks=pytest.mark.xfail(raises=AssertionError)),
    "NVIDIA A6000", "NVIDIA A40", "NVIDIA A10G", "NVIDIA GeForce RTX 2080 SUPER",
    "NVIDIA GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 2080", "NVIDIA GeForce RTX 2070 Super",
    "Quadro RTX 5000 with Max-Q Design", "Tesla T4", "TITAN RTX", "Tesla V100-SXm2-32GB",
    "Tesla V100-PCIE-32GB", "Tesla V100S-PCIE-32GB",
])
def test_get_available_flops_cuda_mapping_exists(device_name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flops = available_flops(device_name, torch.float32, ampere_or_later=False)
    assert flops is not None


def test_throughput():
    throughput = Throughput()
    throughput.update(time=2.0, batches=1, samples=2)
    assert throughput.compute() == {"time": 2.0, "batches": 1, "samples": 2}
    with pytest.raises(RuntimeError, match="same number of samples"):
        throughput.update(time=2.1, batches=2, samples=3, lengths=4)

    throughput = Throughput(window_size=2)
    throughput.update(time=2, batches=1, samples=2, lengths=4)
    throughput.update(time=2.5, batches=2, samples=4, lengths=8)
    assert throughput.compute() == {
        "time": 2.5, "batches": 2, "samples": 4, "lengths": 8, "device/batches_per_sec": 2.0,
        "device/samples_per_sec": 4.0, "device/items_per_sec": 8.0}
    with pytest.raises(ValueError, match="Expected the value to increase"):
        throughput.update(time=2.5, batches=3, samples=2, lengths=4)

    throughput = Throughput(available_flops=50, window_size=2, using_sparse_model=False)
    throughput.update(time=1, batches=1, samples=2, flops=10, lengths=10)
    throughput.update(time=2, batches=2, samples=4, flops=10, lengths=20)
    assert throughput.compute() == {
        "time": 2, "batches": 2, "samples": 4, "lengths": 20, "device/batches_per_sec": 1.0,
        "device/flops_per_sec": 10.0, "device/items_per_sec": 10.0, "device/mfu": 0.2,
        "device/samples_per_sec": 2.0}

    throughput.available_flops = None
    throughput.reset()
    throughput.update(time=1, batches=1, samples=2, flops=10, lengths=10)
    throughput.update(time=2, batches=2, samples=4, flops=10, lengths=20)
    assert "device/mfu" not in throughput.compute()

    with pytest.raises(ValueError, match=r"samples.*to be greater or equal than batches"):
        Throughput(window_size=2).update(time=0, batches=2, samples=1)
    with pytest.raises(ValueError, match=r"lengths.*to be greater or equal than samples"):
        Throughput(window_size=2).update(time=0, batches=2, samples=2, lengths=1)


def test_throughput_sparse_model_scaling_and_warning():
    assert Throughput(available_flops=100.0, using_sparse_model=False).available_flops == 100.0
    assert Throughput(available_flops=100.0, using_sparse_model=True).available_flops == 200.0
    assert Throughput(available_flops=100.0, using_sparse_model=True,
                      sparse_cuda_acceleration_factor=4.0).available_flops == 400.0
    assert Throughput(available_flops=None, using_sparse_model=True).available_flops is None
    with pytest.raises(ConfigurationError, match="cannot reduce the peak"):
        Throughput(available_flops=100.0, using_sparse_model=True,
                   sparse_cuda_acceleration_factor=0.5)
    with pytest.warns(UserWarning, match="MFU assumes dense model FLOPs"):
        Throughput(available_flops=100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Throughput(available_flops=100.0, using_sparse_model=False)
        Throughput(available_flops=None)
    with pytest.raises(ConfigurationError, match="at least 2"):
        Throughput(window_size=1)


def mock_train_loop(monitor):
    total_lengths = 0
    for iter_num in range(1, 6):
        total_lengths += 3 * 2
        monitor.update(time=iter_num + 0.5, batches=iter_num, samples=iter_num * 3,
                       lengths=total_lengths, flops=10)
        monitor.compute_and_log()


def test_throughput_monitor_lite():
    logger = RecordingLogger()
    lite = fulmen.Lite(accelerator=PeakCPU(), devices=1, loggers=logger)
    monitor = LiteThroughputMonitor(lite, window_size=4, separator="|", using_sparse_model=False)
    assert monitor.available_flops == 100
    mock_train_loop(monitor)
    rates = {"device|batches_per_sec": 1.0, "device|samples_per_sec": 3.0,
             "device|items_per_sec": 6.0, "device|flops_per_sec": 10.0, "device|mfu": 0.1}
    assert logger.calls == [
        ({"time": 1.5, "batches": 1, "samples": 3, "lengths": 6}, 0),
        ({"time": 2.5, "batches": 2, "samples": 6, "lengths": 12}, 1),
        ({"time": 3.5, "batches": 3, "samples": 9, "lengths": 18}, 2),
        ({"time": 4.5, "batches": 4, "samples": 12, "lengths": 24, **rates}, 3),
        ({"time": 5.5, "batches": 5, "samples": 15, "lengths": 30, **rates}, 4),
    ]


def test_throughput_monitor_step_and_world_size():
    logger = RecordingLogger()
    lite = fulmen.Lite(accelerator=PeakCPU(), devices=1, loggers=logger)
    monitor = LiteThroughputMonitor(lite, using_sparse_model=True)
    assert monitor.available_flops == 200  # the sparse factor scales the plugin's peak
    assert monitor.step == -1
    monitor.update(time=0.5, batches=1, samples=3)
    assert monitor.compute_and_log() == {"time": 0.5, "batches": 1, "samples": 3}
    assert monitor.step == 0
    monitor.update(time=1.5, batches=2, samples=4)
    monitor.compute_and_log(step=5)
    assert monitor.step == 5
    assert [step for _, step in logger.calls] == [0, 5]

    logger = RecordingLogger()
    monitor = LiteThroughputMonitor(fulmen.Lite(accelerator=PeakCPU(), devices=1,
                                                loggers=logger), window_size=4,
                                    using_sparse_model=False)
    monitor.world_size = 2  # as if there were 2 devices
    mock_train_loop(monitor)
    last = logger.calls[-1][0]
    assert last["batches_per_sec"] == 2.0 and last["samples_per_sec"] == 6.0
    assert last["items_per_sec"] == 12.0 and last["flops_per_sec"] == 20.0
    assert last["device/flops_per_sec"] == 10.0 and last["device/mfu"] == 0.1


def test_monotonic_window():
    w = MonotonicWindow(maxlen=3)
    assert w == []
    for value in (1, 2, 3):
        w.append(value)
    assert w == [1, 2, 3] and w[-2:] == [2, 3]
    with pytest.raises(NotImplementedError):
        w[1] = 123
    with pytest.raises(ValueError, match="Expected the value to increase"):
        w.append(2)
    w.append(4)
    assert w == [2, 3, 4]


def _trainer(logger, monitor, **kwargs):
    return fulmen.Trainer(accelerator=PeakCPU(), devices=1, logger=logger, callbacks=monitor,
                          log_every_n_steps=1, enable_checkpointing=False,
                          enable_model_summary=False, enable_progress_bar=False, **kwargs)


def test_throughput_monitor_fit():
    logger = RecordingLogger()
    monitor = ThroughputMonitor(length_fn=lambda x: 3 * 2, batch_size_fn=lambda x: 3,
                                window_size=4, separator="|", using_sparse_model=False)
    model = BoringModel()
    model.flops_per_batch = 10
    _trainer(logger, monitor, max_steps=5, limit_val_batches=0).fit(model)
    assert "validate" not in monitor._throughputs  # no validation ran
    calls = [(m, s) for m, s in logger.calls if any(k.startswith("train|") for k in m)]
    assert [s for _, s in calls] == [0, 1, 2, 3, 4]  # the loggers' step axis, as Lightning
    for i, (metrics, _) in enumerate(calls, start=1):
        assert metrics["train|batches"] == i and metrics["train|samples"] == 3 * i
        assert metrics["train|lengths"] == 6 * i and metrics["epoch"] == 0
    for metrics, _ in calls[3:]:  # the window of 4 is full
        batches_per_sec = metrics["train|device|batches_per_sec"]
        assert metrics["train|device|samples_per_sec"] == pytest.approx(3 * batches_per_sec)
        assert metrics["train|device|items_per_sec"] == pytest.approx(6 * batches_per_sec)
        assert metrics["train|device|mfu"] == pytest.approx(
            metrics["train|device|flops_per_sec"] / 100)
    assert "train|device|mfu" not in calls[2][0]


class SlowValidation(BoringModel):
    def validation_step(self, batch, batch_idx):
        import time

        if not self.trainer.sanity_checking:
            time.sleep(1.5)
        return super().validation_step(batch, batch_idx)


def test_throughput_monitor_fit_with_validation():
    logger = RecordingLogger()
    monitor = ThroughputMonitor(batch_size_fn=lambda x: 1, window_size=2)
    _trainer(logger, monitor, max_steps=2, val_check_interval=1, limit_val_batches=1,
             num_sanity_val_steps=2).fit(SlowValidation())
    train = [m for m, _ in logger.calls if "train/time" in m]
    val = [m for m, _ in logger.calls if "validate/time" in m]
    assert [m["train/batches"] for m in train] == [1, 2]
    # one batch per validation run (after each step); the sanity check is not measured
    assert val and all(m["validate/batches"] == 1 for m in val)
    assert all(m["validate/time"] >= 1.5 for m in val)
    # the training clock excludes the 1.5 s validation run between the two steps
    assert train[1]["train/time"] < 1.5
    assert "train/device/batches_per_sec" in train[1]


def test_throughput_monitor_warns_without_flops_per_batch():
    monitor = ThroughputMonitor(batch_size_fn=lambda x: 1)
    with pytest.warns(UserWarning, match="define a `flops_per_batch`"):
        _trainer(RecordingLogger(), monitor, max_steps=2, limit_val_batches=0).fit(BoringModel())


@pytest.mark.parametrize("stage", ["validate", "test", "predict"])
def test_throughput_monitor_eval(stage):
    logger = RecordingLogger()
    monitor = ThroughputMonitor(batch_size_fn=lambda x: 1, window_size=2)
    model = BoringModel()
    model.flops_per_batch = 10
    trainer = _trainer(logger, monitor, limit_val_batches=3, limit_test_batches=3,
                       limit_predict_batches=3)
    getattr(trainer, stage)(model)
    batches = [m[f"{stage}/batches"] for m, _ in logger.calls if f"{stage}/batches" in m]
    assert batches == [1, 2, 3]
    assert [s for m, s in logger.calls if f"{stage}/batches" in m] == [1, 2, 3]
