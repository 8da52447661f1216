"""What each precision plugin really does to modules, inputs, autocast and loss scaling."""

import pytest
import torch

import fulmen
from fulmen import ConfigurationError


def selected(name):
    return fulmen.Trainer(precision=name).precision_plugin


def batch():
    return {"x": torch.randn(4, 3), "y": torch.tensor([0, 1, 0, 1]), "meta": [torch.ones(2)]}


def test_32_true_changes_nothing(fake_dists):
    plugin = selected("32-true")
    data = batch()
    assert plugin.convert_input(data) is data
    with plugin.forward_context():
        assert torch.get_default_dtype() == torch.float32


def test_64_true_converts_module_float_inputs_and_created_tensors(fake_dists):
    plugin = selected("64-true")
    module = plugin.convert_module(torch.nn.Linear(3, 2))
    assert module.weight.dtype == torch.float64
    data = plugin.convert_input(batch())
    assert data["x"].dtype == torch.float64 and data["meta"][0].dtype == torch.float64
    assert data["y"].dtype == torch.int64  # labels untouched
    with plugin.forward_context():
        assert torch.zeros(1).dtype == torch.float64
    assert torch.zeros(1).dtype == torch.float32


@pytest.mark.parametrize(("name", "dtype"), [("16-true", torch.float16),
                                             ("bf16-true", torch.bfloat16)])
def test_true_half_precisions(fake_dists, name, dtype):
    plugin = selected(name)
    assert plugin.name == name
    module = plugin.convert_module(torch.nn.Linear(3, 2))
    assert module.weight.dtype == dtype
    with plugin.forward_context():
        out = module(plugin.convert_input(batch())["x"])
    assert out.dtype == dtype
    assert plugin.convert_output(out).dtype == torch.float32


def test_bf16_mixed_autocasts_matmuls_and_keeps_float32_weights(fake_dists):
    plugin = selected("bf16-mixed")
    module = plugin.convert_module(torch.nn.Linear(3, 2))
    with plugin.forward_context():
        out = module(torch.randn(4, 3))
    assert module.weight.dtype == torch.float32
    assert out.dtype == torch.bfloat16
    assert plugin.scaler is None and plugin.state_dict() == {}


def test_16_mixed_scales_the_loss_and_skips_a_step_on_overflow(fake_dists):
    plugin = selected("16-mixed")
    assert isinstance(plugin.scaler, torch.amp.GradScaler)
    module = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    loss = module(torch.randn(4, 3)).sum()
    plugin.backward(loss)
    scale = plugin.scaler.get_scale()
    assert scale == 65536.0
    before = module.weight.detach().clone()
    module.weight.grad.fill_(float("inf"))  # an overflow: the step must be skipped
    plugin.optimizer_step(optimizer)
    assert torch.equal(module.weight, before)
    assert plugin.scaler.get_scale() < scale  # and the scale backs off
    assert "scaler" in plugin.state_dict()


def test_16_mixed_unscales_before_clipping(fake_dists):
    plugin = selected("16-mixed")
    module = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    reference = torch.nn.Linear(3, 1)
    reference.load_state_dict(module.state_dict())
    x = torch.randn(4, 3)
    plugin.backward(module(x).sum())
    reference(x).sum().backward()
    plugin.unscale_gradients(optimizer)
    assert torch.allclose(module.weight.grad, reference.weight.grad)


def test_64_true_is_refused_where_its_record_says(fake_dists):
    import fulmen.kernel.records as records

    spec = next(e.record for e in fulmen.get_plugin_manager().catalog().entries("precision")
                if e.name == "64-true")
    assert spec.accelerators == ("cpu", "cuda")
    assert isinstance(spec, records.PrecisionSpec)


def test_bad_dtype_names_the_valid_ones():
    from fulmen_precision import MixedPrecision

    with pytest.raises(ConfigurationError, match=r"MixedPrecision\(dtype='float8'\): expected one "
                       r"of \['bfloat16', 'float16', 'float32', 'float64'\]"):
        MixedPrecision("float8")
