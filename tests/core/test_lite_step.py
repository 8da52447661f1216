"""Lite sends each call of the module it set up through ``Strategy.step("forward", ...)``, as
the Trainer sends ``training_step`` through it, and every call through the precision's
``convert_input``, ``forward_context`` and ``convert_output``: one path, whatever the strategy
and precision override (no identity checks that skip a base class's method).
docs/plugin-contracts.md, "One training forward"."""

from __future__ import annotations

from typing import Any

import torch

import fulmen
from fulmen_precision import Precision32
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


class Watching(Precision32):
    """The base precision's behaviour, counting what each forward goes through."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def convert_input(self, data: Any) -> Any:
        self.seen.append("convert_input")
        return super().convert_input(data)

    def forward_context(self) -> Any:
        self.seen.append("forward_context")
        return super().forward_context()

    def convert_output(self, data: Any) -> Any:
        self.seen.append("convert_output")
        return super().convert_output(data)


def test_every_call_goes_through_the_precision_and_the_base_step():
    precision = Watching()
    lite = fulmen.Lite(accelerator="cpu", devices=1, precision=precision)
    first = lite.setup(torch.nn.Linear(3, 1))
    last = lite.setup(torch.nn.Linear(3, 1))
    x = torch.randn(2, 3)
    for model in (last, first):  # the strategy's module (through step) and another one
        precision.seen.clear()
        assert torch.allclose(model(x), model.module(x))
        assert precision.seen == ["convert_input", "forward_context", "convert_output"]


def test_a_hook_on_the_wrapper_keeps_the_step():
    strategy = Counting()
    lite = fulmen.Lite(accelerator="cpu", devices=1, strategy=strategy)
    model = lite.setup(torch.nn.Linear(3, 1))
    seen: list[bool] = []
    model.register_forward_hook(lambda *_: seen.append(True))
    model(torch.randn(2, 3))
    assert seen == [True] and strategy.calls == [("forward", True)]
