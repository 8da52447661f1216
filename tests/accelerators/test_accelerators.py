import pytest
import torch

import fulmen
from fulmen import ConfigurationError
from fulmen_accelerators import CPUAccelerator, CUDAAccelerator, MPSAccelerator


def test_cpu_parses_process_counts_and_gives_cpu_devices():
    cpu = CPUAccelerator()
    assert cpu.parse_devices(2) == [0, 1]
    assert cpu.get_parallel_devices([0, 1]) == [torch.device("cpu")] * 2
    assert CPUAccelerator.is_available()


def test_cuda_reports_why_it_is_unavailable():
    if CUDAAccelerator.is_available():
        pytest.skip("a GPU is present")
    assert CUDAAccelerator.auto_device_count() == 0
    assert "CPU-only build" in CUDAAccelerator.availability_note() or \
        "device_count() is 0" in CUDAAccelerator.availability_note()


def test_mps_is_absent_off_macos():
    assert not MPSAccelerator.is_available() or torch.backends.mps.is_available()
    assert MPSAccelerator.availability_note()


def test_gpu_alias_selects_cuda_or_says_none_was_found(fake_dists):
    if CUDAAccelerator.is_available():
        assert fulmen.Trainer(accelerator="gpu", devices=1).accelerator.name == "cuda"
    else:
        with pytest.raises(ConfigurationError, match=r"accelerator='gpu': no cuda device was found"
                           r" \(.*\)\. Available here: 'cpu'\."):
            fulmen.Trainer(accelerator="gpu", devices=1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_devices_table_on_a_real_gpu(fake_dists):
    count = torch.cuda.device_count()
    trainer = fulmen.Trainer(accelerator="gpu", devices=-1)
    assert trainer.device_ids == list(range(count))
    assert trainer.strategy.root_device.type == "cuda"
    with pytest.raises(ConfigurationError, match="were asked for but only"):
        fulmen.Trainer(accelerator="gpu", devices=count + 1)
