"""A set-up module's wrapper calls the module directly until something is registered on the
wrapper itself; hooks registered on it (or on the module) still run."""

from __future__ import annotations

import torch

import fulmen


def _setup() -> tuple[fulmen.Lite, torch.nn.Module, torch.nn.Module]:
    lite = fulmen.Lite(accelerator="cpu")
    module = torch.nn.Linear(3, 2)
    return lite, module, lite.setup(module)


def test_forward_and_backward_hooks_on_the_wrapper_run():
    _, _, wrapped = _setup()
    seen: list[str] = []
    wrapped.register_forward_pre_hook(lambda m, args: seen.append("pre"))
    wrapped.register_forward_hook(lambda m, args, out: seen.append("forward"))
    wrapped.register_full_backward_hook(lambda m, gin, gout: seen.append("backward"))
    out = wrapped(torch.randn(4, 3, requires_grad=True))
    out.sum().backward()
    assert seen == ["pre", "forward", "backward"]


def test_a_forward_hook_may_replace_the_wrappers_output():
    _, _, wrapped = _setup()
    wrapped.register_forward_hook(lambda m, args, out: out * 0)
    assert wrapped(torch.randn(2, 3)).abs().sum() == 0


def test_hooks_on_the_module_run_without_any_on_the_wrapper():
    _, module, wrapped = _setup()
    seen: list[str] = []
    module.register_forward_hook(lambda m, args, out: seen.append("module"))
    x = torch.randn(2, 3)
    torch.testing.assert_close(wrapped(x), module(x))
    assert seen == ["module", "module"]
