"""Lightning's ``tests_fabric/utilities/test_device_dtype_mixin.py``, ported to fulmen.

Lightning's ``_DeviceDtypeModuleMixin`` (a base of ``LightningModule``) is part of
``fulmen.Module``: ``dtype`` (and the ``_dtype`` attribute, which libraries such as darts read)
records the last ``.to(dtype)`` / ``.type()`` / ``.float()`` / ``.double()`` / ``.half()``, on
every ``Module`` nested inside, through plain ``nn.Module`` layers. Adapted names:
``_DeviceDtypeModuleMixin`` -> ``fulmen.Module``; ``_DtypeContextManager`` -> setting the default
dtype. The CUDA and MPS cases run where such a device exists.

Deliberate difference: ``device`` is where the module's parameters (else buffers) are, and the
recorded ``_device`` only for a module without any, so a strategy that moves parameters itself
(not through ``.to()``) is still reported right. For a module moved with ``.to()`` /
``.cuda()`` / ``.cpu()`` both are the same, as every test here checks.
"""

from __future__ import annotations

import pytest
import torch
from boring import BoringModel
from torch import nn

import fulmen

_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class SubSubModule(fulmen.Module):
    pass


class SubModule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.module = SubSubModule()


class TopModule(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.module = SubModule()


@pytest.mark.parametrize(
    ("dst_device_str", "dst_type"),
    [
        ("cpu", torch.half),
        ("cpu", torch.float),
        ("cpu", torch.double),
        pytest.param("cuda:0", torch.half, marks=_cuda),
        pytest.param("cuda:0", torch.double, marks=_cuda),
    ],
)
def test_submodules_device_and_dtype(dst_device_str, dst_type):
    """Device and dtype updates propagate through mixed nesting of plain nn.Modules and
    fulmen Modules."""
    dst_device = torch.device(dst_device_str)
    model = TopModule()
    assert model.device == torch.device("cpu")
    model = model.to(device=dst_device, dtype=dst_type)
    # nn.Module does not have these attributes
    assert not hasattr(model.module, "_device")
    assert not hasattr(model.module, "_dtype")
    # device and dtype change should propagate down into all children
    assert model.device == model.module.module.device == dst_device
    assert model.dtype == model.module.module.dtype == dst_type
    assert model._dtype == model.module.module._dtype == dst_type


@pytest.mark.parametrize("dst_type", [torch.float, torch.half, torch.double])
def test_submodules_context_device_and_dtype(dst_type):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dst_type)
    try:
        model = TopModule()
    finally:
        torch.set_default_dtype(previous)
    assert model.device == torch.device("cpu")
    assert model.dtype == dst_type


@_cuda
@pytest.mark.parametrize("device", [None, 0, torch.device("cuda", 0)])
def test_cuda_device(device):
    model = TopModule()
    model.cuda(device)
    device = model.device
    assert device.type == "cuda"
    assert device.index is not None
    assert device.index == torch.cuda.current_device()


@_cuda
def test_cpu_device():
    model = SubSubModule().cuda()
    assert model.device.type == "cuda"
    assert model.device.index == 0
    model.cpu()
    assert model.device.type == "cpu"
    assert model.device.index is None


class ExampleModule(fulmen.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight)


def test_to_combinations():
    module = ExampleModule(torch.rand(3, 4))
    # sanity check
    assert module.weight.shape == (3, 4)
    assert module.weight.dtype is torch.float32
    # positional dtype
    module.to(torch.double)
    assert module.weight.dtype is torch.float64
    # positional device
    module.to("cpu", dtype=torch.half, non_blocking=True)
    assert module.weight.dtype is torch.float16
    assert module.device == torch.device("cpu")
    assert module.dtype is torch.float16


def test_dtype_conversions():
    module = ExampleModule(torch.tensor(1))
    # different dtypes
    assert module.weight.dtype is torch.int64
    assert module.dtype is torch.float32
    # `.double()` skips non floating points
    module.double()
    assert module.weight.dtype is torch.int64
    assert module.dtype is torch.float64
    # but `type` doesn't
    module.type(torch.float)
    assert module.weight.dtype is torch.float32
    assert module.dtype is torch.float32
    # now, test the rest
    module.float()
    assert module.weight.dtype is torch.float32
    assert module.dtype is torch.float32
    module.half()
    assert module.weight.dtype is torch.float16
    assert module.dtype is torch.float16


def test_precision_plugin_records_dtype(tmp_path):
    """A 64-bit run casts the module through ``.double()``: ``dtype`` and ``_dtype`` follow, as
    in Lightning (``Trainer(precision="64-true")``), and stay float32 for a 32-bit run."""
    for precision, expected in (("64-true", torch.float64), ("32-true", torch.float32)):
        model = BoringModel()
        trainer = fulmen.Trainer(default_root_dir=tmp_path, precision=precision, max_steps=1,
                                 limit_val_batches=0, logger=False, enable_progress_bar=False,
                                 enable_model_summary=False, enable_checkpointing=False)
        trainer.fit(model)
        assert model.dtype == model._dtype == expected
