"""Lite sends each call of the module it set up through ``Strategy.step("forward", ...)`` when
the strategy customises ``step``, as the Trainer sends ``training_step`` through it; a strategy
that does not customise it is called directly (no extra frame). docs/plugin-contracts.md, "One
training forward"."""

from __future__ import annotations

from typing import Any

import torch

import fulmen
from fulmen_strategies import SingleDeviceStrategy


class Counting(SingleDeviceStrategy):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, bool]] = []

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, torch.is_grad_enabled()))
        return super().step(method, *args, **kwargs)


def test_each_call_of_the_set_up_module_goes_through_step():
    strategy = Counting()
    lite = fulmen.Lite(accelerator="cpu", devices=1, strategy=strategy)
    model = lite.setup(torch.nn.Linear(3, 1))
    x = torch.randn(2, 3)
    expected = model.module(x)
    out = model(x)
    assert torch.allclose(out, expected)
    lite.backward(out.sum())
    with torch.no_grad():
        model(x)
    assert strategy.calls == [("forward", True), ("forward", False)]


def test_a_module_set_up_before_the_last_one_calls_its_wrapper():
    strategy = Counting()
    lite = fulmen.Lite(accelerator="cpu", devices=1, strategy=strategy)
    first = lite.setup(torch.nn.Linear(3, 1))
    last = lite.setup(torch.nn.Linear(3, 1))
    x = torch.randn(2, 3)
    assert torch.allclose(first(x), first.module(x))  # not the last module's forward
    last(x)
    assert strategy.calls == [("forward", True)]


def test_without_a_step_of_its_own_the_wrapper_is_called_directly():
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    model = lite.setup(torch.nn.Linear(3, 1))
    assert model.__dict__["_call"] is model.module  # the fast path: no step, no extra frame


def test_a_hook_on_the_wrapper_keeps_the_step():
    strategy = Counting()
    lite = fulmen.Lite(accelerator="cpu", devices=1, strategy=strategy)
    model = lite.setup(torch.nn.Linear(3, 1))
    seen: list[bool] = []
    model.register_forward_hook(lambda *_: seen.append(True))
    model(torch.randn(2, 3))
    assert seen == [True] and strategy.calls == [("forward", True)]
