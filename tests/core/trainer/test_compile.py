"""``Trainer(compile=...)`` and models the user compiled: compiled in place after set-up, so
checkpoint keys keep their names both ways."""

from __future__ import annotations

import logging

import pytest
import torch
from tiny_models import TinyModule, loader

import fulmen
from fulmen import ConfigurationError

FAST = {"backend": "aot_eager"}  # compiles through dynamo + AOTAutograd, no C++ build


def trainer(tmp_path, **kwargs) -> fulmen.Trainer:
    return fulmen.Trainer(**{"accelerator": "cpu", "max_epochs": 1, "logger": False,
                             "enable_progress_bar": False, "enable_model_summary": False,
                             "default_root_dir": tmp_path, **kwargs})


@pytest.mark.timeout(240)
def test_compile_true_trains_the_same_and_keeps_checkpoint_keys(tmp_path, caplog):
    torch.manual_seed(0)
    plain = TinyModule()
    torch.manual_seed(0)
    compiled = TinyModule()
    trainer(tmp_path / "a").fit(plain, loader())
    with caplog.at_level(logging.INFO, logger="fulmen"):
        t = trainer(tmp_path / "b", compile=FAST)
        t.fit(compiled, loader())
    assert "torch.compile: the first training_step took" in caplog.text
    for (name, a), (other, b) in zip(plain.state_dict().items(), compiled.state_dict().items()):
        assert name == other and "_orig_mod" not in name
        assert torch.allclose(a, b, atol=1e-5)
    t.save_checkpoint(tmp_path / "c.ckpt")
    fresh = TinyModule()  # an uncompiled model loads the compiled one's checkpoint
    fresh.load_state_dict(torch.load(tmp_path / "c.ckpt", weights_only=True)["state_dict"])


@pytest.mark.timeout(240)
def test_a_model_the_user_compiled_is_unwrapped_and_compiled_after_set_up(tmp_path):
    model = TinyModule()
    t = trainer(tmp_path)
    t.fit(torch.compile(model, backend="aot_eager"), loader())
    assert t.module is model and t.compile_options == {}
    assert all("_orig_mod" not in k for k in model.state_dict())
    t.validate(model, loader())  # a second stage does not compile again


@pytest.mark.parametrize(("value", "message"), [
    ("yes", "compile='yes'\\): use True, False, or a dict"),
    ({"modee": "max-autotune"}, "torch.compile takes no modee"),
])
def test_bad_compile_settings_are_refused(value, message):
    with pytest.raises(ConfigurationError, match=message):
        fulmen.Trainer(accelerator="cpu", compile=value, logger=False)


@pytest.mark.timeout(240)
def test_lite_compiles_after_wrapping_and_keeps_state_dict_keys():
    lite = fulmen.Lite(accelerator="cpu")
    torch.manual_seed(0)
    plain = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    reference.load_state_dict(plain.state_dict())
    model = lite.setup(plain, compile=FAST)
    x = torch.randn(3, 4)
    assert torch.allclose(model(x), reference(x), atol=1e-6)
    assert list(model.state_dict()) == list(reference.state_dict())
    again = lite.setup(torch.compile(torch.nn.Linear(2, 2), backend="aot_eager"))
    assert list(again.state_dict()) == ["weight", "bias"]


@pytest.mark.timeout(240)
def test_an_uncompiled_checkpoint_resumes_a_compiled_run(tmp_path):
    """The other direction of interchangeability: a plain run's checkpoint resumes under
    compile=..., and the compiled run's keys are still the plain ones."""
    first = trainer(tmp_path / "plain")
    first.fit(TinyModule(), loader())
    first.save_checkpoint(tmp_path / "plain.ckpt")
    resumed = trainer(tmp_path / "compiled", compile=FAST, max_epochs=2)
    model = TinyModule()
    resumed.fit(model, loader(), ckpt_path=tmp_path / "plain.ckpt")
    assert resumed.current_epoch == 2
    assert all("_orig_mod" not in k for k in model.state_dict())


@pytest.mark.parametrize("compile_value", [True, {"mode": "max-autotune"}])
def test_inductor_without_a_cpp_compiler_is_refused_before_training(tmp_path, monkeypatch,
                                                                     compile_value):
    """A machine without a C++ compiler (faked: an empty PATH, no $CXX) cannot run inductor on
    the CPU: the Trainer says which backend needs what, and suggests compile=False."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(ConfigurationError, match=r"backend 'inductor' needs a C\+\+ compiler") as e:
        fulmen.Trainer(accelerator="cpu", compile=compile_value, logger=False)
    assert "compile=False" in str(e.value) and "aot_eager" in str(e.value)
    fulmen.Trainer(accelerator="cpu", compile=FAST, logger=False)  # needs no compiler


@pytest.mark.timeout(240)
def test_the_step_methods_are_compiled_with_the_model_as_lightning_does(tmp_path):
    """Lightning compiles ``training_step`` (and the other steps) with the forward of a model
    given as ``torch.compile(model)``, so the loss is compiled too: a graph holds the loss."""
    graphs: list[str] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(str(gm.graph))
        return gm.forward

    model = TinyModule()
    trainer(tmp_path, compile={"backend": backend}, limit_train_batches=2,
            limit_val_batches=1, num_sanity_val_steps=0).fit(model, loader(), loader())
    assert any("cross_entropy" in graph for graph in graphs), graphs
    keys = set(TinyModule().state_dict())
    assert set(model.state_dict()) == keys
