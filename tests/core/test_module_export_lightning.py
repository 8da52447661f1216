"""``Module.to_torchscript`` and ``Module.to_onnx``: Lightning's
``tests_pytorch/models/test_torchscript.py`` and ``tests_pytorch/models/test_onnx.py``, ported to
fulmen. ``ParityModuleRNN`` and ``BasicGAN`` are Lightning's test models, reduced to what the
export sees (the layers and ``forward``).

Deliberate differences:
- The deprecation of ``to_torchscript`` (Lightning 2.6.6: "has been deprecated in v2.7") is a
  ``FulmenDeprecationWarning`` saying that ``Module.to_torchscript`` is deprecated as in
  Lightning 2.6.6.
- Without ``onnx``, ``to_onnx`` raises ``fulmen.errors.MissingDependencyError`` (a
  ``ModuleNotFoundError``, as Lightning's). Where ``torch.onnx.export`` exports with dynamo by
  default (torch 2.9 on), ``onnxscript`` is required up front even without ``dynamo=True``
  (Lightning leaves that to torch's own import error).
- The ONNX tests that need ``onnx`` (and ``onnxscript``) skip when it is not installed; the
  ``onnxruntime`` comparison is not ported (checked with ``onnx.checker`` instead), nor are the
  GPU and multi-GPU cases.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
from io import BytesIO
from pathlib import Path

import pytest
import torch
from boring import BoringModel
from torch import nn

import fulmen
from fulmen import Module
from fulmen.errors import FulmenDeprecationWarning, MissingDependencyError

DEPRECATED = "Module.to_torchscript` is deprecated"
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")


class ParityModuleRNN(Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(10, 20, batch_first=True)
        self.linear_out = nn.Linear(in_features=20, out_features=5)
        self.example_input_array = torch.rand(2, 3, 10)

    def forward(self, x):
        seq, _ = self.rnn(x)
        return self.linear_out(seq)


class BasicGAN(Module):
    def __init__(self, hidden_dim: int = 128, learning_rate: float = 0.001, **kwargs):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.hidden_dim = hidden_dim
        self.learning_rate = learning_rate
        self.generator = nn.Sequential(nn.Linear(hidden_dim, 64), nn.LeakyReLU(0.2),
                                       nn.Linear(64, 28 * 28), nn.Tanh())
        self.discriminator = nn.Sequential(nn.Linear(28 * 28, 32), nn.Sigmoid())
        self.example_input_array = torch.rand(2, self.hidden_dim)

    def forward(self, z):
        return self.generator(z).view(z.size(0), 1, 28, 28)


def _boring_with_input():
    model = BoringModel()
    model.example_input_array = torch.randn(5, 32)
    return model


MODELS = [_boring_with_input, ParityModuleRNN, BasicGAN]


@pytest.mark.parametrize("make", MODELS)
def test_torchscript_input_output(make):
    """Test that scripted Module forward works."""
    model = make()
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript()
    assert isinstance(script, torch.jit.ScriptModule)

    model.eval()
    with torch.no_grad():
        model_output = model(model.example_input_array)
    script_output = script(model.example_input_array)
    assert torch.allclose(script_output, model_output, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("make", MODELS)
def test_torchscript_example_input_output_trace(make):
    """Test that traced Module forward works with example_input_array."""
    torch.manual_seed(1)
    model = make()
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript(method="trace")
    assert isinstance(script, torch.jit.ScriptModule)

    model.eval()
    with torch.no_grad():
        model_output = model(model.example_input_array)
    assert torch.allclose(script(model.example_input_array), model_output)


def test_torchscript_input_output_trace():
    """Test that traced Module forward works with example_inputs."""
    model = BoringModel()
    example_inputs = torch.randn(1, 32)
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript(example_inputs=example_inputs, method="trace")
    assert isinstance(script, torch.jit.ScriptModule)
    model.eval()
    with torch.no_grad():
        model_output = model(example_inputs)
    assert torch.allclose(script(example_inputs), model_output)


def test_torchscript_device():
    """Test that scripted module is on the correct device."""
    device = torch.device("cpu")
    model = BoringModel().to(device)
    model.example_input_array = torch.randn(5, 32)
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript()
    assert next(script.parameters()).device == device
    assert script(model.example_input_array.to(device)).device == device


def test_torchscript_device_with_check_inputs():
    model = BoringModel()
    model.example_input_array = torch.randn(5, 32)
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript(method="trace", check_inputs=torch.rand(5, 32))
    assert isinstance(script, torch.jit.ScriptModule)


def test_torchscript_retain_training_state():
    """Test that torchscript export does not alter the training mode of original model."""
    model = BoringModel()
    model.train(True)
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript()
    assert model.training
    assert not script.training
    model.train(False)
    with pytest.deprecated_call(match=DEPRECATED):
        _ = model.to_torchscript()
    assert not model.training
    assert not script.training


@pytest.mark.parametrize("make", MODELS)
def test_torchscript_properties(make):
    """Test that scripted Module has unnecessary methods removed."""
    model = make()
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript()
    assert not hasattr(model, "batch_size") or hasattr(script, "batch_size")
    assert not hasattr(model, "learning_rate") or hasattr(script, "learning_rate")
    assert not callable(getattr(script, "training_step", None))


@pytest.mark.parametrize("make", MODELS)
def test_torchscript_save_load(tmp_path, make):
    """Test that scripted Module is correctly saved and can be loaded."""
    model = make()
    output_file = str(tmp_path / "model.pt")
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript(file_path=output_file)
    loaded_script = torch.jit.load(output_file)
    assert torch.allclose(next(script.parameters()), next(loaded_script.parameters()))


def test_torchscript_save_load_custom_filesystem(tmp_path):
    """Saved through fsspec (an in-memory file system here), read back from it."""
    fsspec = pytest.importorskip("fsspec")
    model = BoringModel()
    output_file = "memory://fulmen-torchscript/model.pt"
    with pytest.deprecated_call(match=DEPRECATED):
        script = model.to_torchscript(file_path=output_file)
    with fsspec.open(output_file, "rb") as f:
        loaded_script = torch.jit.load(f)
    assert torch.allclose(next(script.parameters()), next(loaded_script.parameters()))


def test_torchcript_invalid_method():
    """Test that an error is thrown with invalid torchscript method."""
    model = BoringModel()
    model.train(True)
    with pytest.deprecated_call(match=DEPRECATED), \
            pytest.raises(ValueError, match="only supports 'script' or 'trace'"):
        model.to_torchscript(method="temp")


def test_torchscript_with_no_input():
    """Test that an error is thrown when there is no input tensor."""
    model = BoringModel()
    model.example_input_array = None
    with pytest.deprecated_call(match=DEPRECATED), \
            pytest.raises(ValueError, match=r"requires either `example_inputs` or `model.example_input_array`"):
        model.to_torchscript(method="trace")


def test_torchscript_script_recursively():
    class GrandChild(Module):
        def __init__(self):
            super().__init__()
            self.model = torch.nn.Linear(1, 1)

        def forward(self, inputs):
            return self.model(inputs)

    class Child(Module):
        def __init__(self):
            super().__init__()
            self.model = torch.nn.Sequential(GrandChild(), GrandChild())

        def forward(self, inputs):
            return self.model(inputs)

    class Parent(Module):
        def __init__(self):
            super().__init__()
            self.model = Child()

        def forward(self, inputs):
            return self.model(inputs)

    lm = Parent()
    assert not lm._jit_is_scripting
    with pytest.deprecated_call(match=DEPRECATED):
        script = lm.to_torchscript(method="script")
    assert not lm._jit_is_scripting
    assert isinstance(script, torch.jit.RecursiveScriptModule)


def test_to_torchscript_deprecation():
    """The warning points at the caller."""
    model = _boring_with_input()
    with pytest.warns(FulmenDeprecationWarning, match=DEPRECATED) as record:
        script = model.to_torchscript()
    assert isinstance(script, torch.jit.ScriptModule)
    assert [w.filename for w in record if w.category is FulmenDeprecationWarning] == [__file__]


def test_torchscript_after_fit_and_with_saved_hyperparameters(tmp_path):
    """A module that trained (attached to a Trainer, hyper-parameters and flags set on the
    instance) scripts, its transfer hooks moving the trace input."""
    moved = []

    class Model(BasicGAN):
        def validation_step(self, batch, batch_idx):
            self.log("mean", self(batch).mean())

        def on_before_batch_transfer(self, batch, dataloader_idx):
            moved.append(dataloader_idx)
            return batch

    model = Model(hidden_dim=8, note="x")
    model.flops_per_batch = 10
    model.strict_loading = False
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_steps=1, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False)
    trainer.validate(model, torch.utils.data.DataLoader(torch.randn(4, 8), batch_size=2),
                     verbose=False)
    moved.clear()
    with pytest.deprecated_call(match=DEPRECATED):
        traced = model.to_torchscript(method="trace")
    with pytest.deprecated_call(match=DEPRECATED):
        scripted = model.to_torchscript()
    sample = model.example_input_array
    assert torch.allclose(traced(sample), scripted(sample)) and moved == [0]


# ---------------------------------------------------------------- test_onnx.py

_ONNX = importlib.util.find_spec("onnx") is not None
_ONNXSCRIPT = importlib.util.find_spec("onnxscript") is not None
_EXPORTS_WITH_DYNAMO = inspect.signature(torch.onnx.export).parameters.get("dynamo") is not None and \
    inspect.signature(torch.onnx.export).parameters["dynamo"].default is True
needs_onnx = pytest.mark.skipif(not _ONNX or (_EXPORTS_WITH_DYNAMO and not _ONNXSCRIPT),
                                reason="onnx (and, where torch exports with dynamo by default, "
                                       "onnxscript) is not installed")


@pytest.mark.skipif(_ONNX, reason="onnx is installed")
def test_to_onnx_without_onnx():
    """As Lightning without ``onnx``: a ``ModuleNotFoundError`` that names it."""
    model = _boring_with_input()
    with pytest.raises(ModuleNotFoundError, match=re.escape(
            "`BoringModel.to_onnx()` requires `onnx` to be installed")) as error:
        model.to_onnx(BytesIO())
    assert isinstance(error.value, MissingDependencyError)


@pytest.mark.skipif(not _ONNX or _ONNXSCRIPT, reason="needs onnx without onnxscript")
def test_model_onnx_export_missing_onnxscript():
    """Test that an error is raised if onnxscript is not available."""
    model = _boring_with_input()
    with pytest.raises(ModuleNotFoundError, match=re.escape(
            f"`{type(model).__name__}.to_onnx(dynamo=True)` requires `onnxscript` and `torch>=2.5.0` "
            "to be installed")):
        model.to_onnx(dynamo=True)


@needs_onnx
def test_model_saves_with_input_sample(tmp_path):
    """Test that ONNX model saves with input sample."""
    model = BoringModel()
    input_sample = torch.randn((1, 32))

    file_path = os.path.join(tmp_path, "os.path.onnx")
    model.to_onnx(file_path, input_sample)
    assert os.path.isfile(file_path)
    assert os.path.getsize(file_path) > 4e2

    file_path = Path(tmp_path) / "pathlib.onnx"
    model.to_onnx(file_path, input_sample)
    assert os.path.isfile(file_path)
    assert os.path.getsize(file_path) > 4e2

    buffer = BytesIO()
    model.to_onnx(file_path=buffer, input_sample=input_sample, dynamo=False)
    assert len(buffer.getvalue()) > 4e2


@needs_onnx
@pytest.mark.parametrize(("make", "input_sample"), [
    (BoringModel, torch.randn(1, 32)), (ParityModuleRNN, torch.rand(2, 3, 10))])
def test_model_saves_with_example_input_array(tmp_path, make, input_sample):
    """Test that ONNX model saves with example_input_array; the file is a valid model."""
    import onnx

    model = make()
    model.example_input_array = input_sample
    model.train()
    file_path = os.path.join(tmp_path, "model.onnx")
    model.to_onnx(file_path)
    assert os.path.exists(file_path) is True
    assert os.path.getsize(file_path) > 4e2
    onnx.checker.check_model(onnx.load(file_path))
    assert model.training  # the mode is put back


@needs_onnx
def test_error_if_no_input(tmp_path):
    """Test that an error is thrown when there is no input tensor."""
    model = BoringModel()
    model.example_input_array = None
    file_path = os.path.join(tmp_path, "model.onnx")
    with pytest.raises(ValueError, match=r"Could not export to ONNX since neither `input_sample` nor"
                                         r" `model.example_input_array` attribute is set."):
        model.to_onnx(file_path)
