"""The per-batch path passes over a base class's step, backward and optimizer_step only when
nothing overrides them: an override in a strategy or precision is called on every batch, by
the Trainer and by Lite."""

from __future__ import annotations

import contextlib
import copy
from collections import Counter
from collections.abc import Iterator
from typing import Any
from unittest import mock

import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.direct import (
    closure_first,
    direct_backward,
    direct_optimizer_step,
    direct_step,
    plain_optimizer_step,
)
from fulmen_precision import Precision32
from fulmen_strategies import SingleDeviceStrategy

BATCHES = 6


class CountingStrategy(SingleDeviceStrategy):
    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.counts[method] += 1
        return super().step(method, *args, **kwargs)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        self.counts["backward"] += 1
        super().backward(loss, *args, **kwargs)

    def optimizer_step(self, optimizer: Any, closure: Any = None, after_closure: Any = None
                       ) -> Any:
        self.counts["optimizer_step"] += 1
        return super().optimizer_step(optimizer, closure, after_closure)


class CountingPrecision(Precision32):
    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    @contextlib.contextmanager
    def forward_context(self) -> Iterator[None]:
        self.counts["forward_context"] += 1
        yield

    def backward(self, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        self.counts["backward"] += 1
        super().backward(tensor, *args, **kwargs)

    def optimizer_step(self, optimizer: Any, closure: Any = None, after_closure: Any = None
                       ) -> Any:
        self.counts["optimizer_step"] += 1
        return super().optimizer_step(optimizer, closure, after_closure)


class Net(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(strategy: Any, plugins: list[Any]) -> None:
    trainer = fulmen.Trainer(accelerator="cpu", strategy=strategy, plugins=plugins,
                             max_epochs=1, logger=False, enable_progress_bar=False,
                             enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(Net(), DataLoader(TensorDataset(torch.randn(4 * BATCHES, 4)), batch_size=4))


def test_a_strategy_that_overrides_step_backward_and_optimizer_step_runs_them_every_batch():
    strategy = CountingStrategy()
    _fit(strategy, [])
    assert strategy.counts == {"training_step": BATCHES, "backward": BATCHES,
                               "optimizer_step": BATCHES}


def test_a_precision_that_overrides_them_runs_them_every_batch():
    precision = CountingPrecision()
    _fit("single_device", [precision])
    assert precision.counts == {"forward_context": BATCHES, "backward": BATCHES,
                                "optimizer_step": BATCHES}


def _three_lite_steps(lite: fulmen.Lite) -> None:
    model = torch.nn.Linear(4, 1)
    model, optimizer = lite.setup(model, torch.optim.SGD(model.parameters(), lr=0.1))
    for _ in range(3):
        optimizer.zero_grad()
        lite.backward(model(torch.randn(2, 4)).sum())
        optimizer.step()


def test_lite_runs_the_overrides_too():
    strategy, precision = CountingStrategy(), CountingPrecision()
    lite = fulmen.Lite(accelerator="cpu", strategy=strategy, plugins=[precision])
    _three_lite_steps(lite)
    assert strategy.counts == {"backward": 3, "optimizer_step": 3}
    assert precision.counts["backward"] == 3 and precision.counts["optimizer_step"] == 3


def test_the_bypass_is_taken_only_for_the_base_behaviour():
    plain = SingleDeviceStrategy()
    plain.precision = Precision32()
    plain.module = Net()
    assert direct_step(plain, "training_step") == plain.module.training_step
    assert direct_backward(plain) is torch.Tensor.backward
    assert direct_optimizer_step(plain) == plain.precision.optimizer_step
    assert plain_optimizer_step(plain)
    counting = CountingStrategy()
    counting.precision = CountingPrecision()
    counting.module = Net()
    assert direct_step(counting, "training_step") is None
    assert direct_backward(counting) == counting.backward
    assert direct_optimizer_step(counting) == counting.optimizer_step
    assert not plain_optimizer_step(counting)


def test_a_backward_that_differs_only_inside_step_is_passed_over_outside_it():
    """DDP's and FSDP's ``backward`` add something only inside ``step`` (manual optimization
    within the forward): outside it the loops call the precision's, or ``Tensor.backward``. A
    subclass that overrides ``backward`` again keeps its override on every batch."""
    from fulmen_strategies import DDPStrategy, FSDPStrategy

    class CountingDDP(DDPStrategy):
        def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
            super().backward(loss, *args, **kwargs)

    for strategy in (DDPStrategy(), FSDPStrategy()):
        assert strategy.plain_backward_outside_step()
        strategy.precision = Precision32()
        assert direct_backward(strategy) is torch.Tensor.backward
        strategy.precision = CountingPrecision()
        assert direct_backward(strategy) == strategy.precision.backward
    counting = CountingDDP()
    counting.precision = Precision32()
    assert not counting.plain_backward_outside_step()
    assert direct_backward(counting) == counting.backward
    assert not CountingStrategy().plain_backward_outside_step()


def test_with_a_precision_backward_only_the_precisions_runs_every_batch():
    precision = CountingPrecision()
    lite = fulmen.Lite(accelerator="cpu", plugins=[precision])
    _three_lite_steps(lite)
    assert precision.counts["backward"] == 3


class StepRecordingSGD(torch.optim.SGD):
    """A subclass: its step gets the closure, as Lightning passes it."""

    closures = 0

    def step(self, closure: Any = None) -> Any:
        self.closures += closure is not None
        return super().step(closure)


def test_only_torch_s_own_optimizers_are_stepped_after_their_closure():
    plain = SingleDeviceStrategy()
    plain.precision = Precision32()
    params = [torch.nn.Parameter(torch.zeros(2))]
    assert closure_first(plain, torch.optim.SGD(params, lr=0.1))
    assert closure_first(plain, torch.optim.AdamW(params))
    assert not closure_first(plain, torch.optim.LBFGS(params))  # evaluates it many times
    assert not closure_first(plain, StepRecordingSGD(params, lr=0.1))
    with torch.no_grad():  # step(closure) would turn grad on for the closure
        assert not closure_first(plain, torch.optim.SGD(params, lr=0.1))
    with mock.patch.object(torch.optim.SGD, "step"):
        assert not closure_first(plain, torch.optim.SGD(params, lr=0.1))
    mocked = torch.optim.SGD(params, lr=0.1)
    mocked.step = mock.MagicMock()  # type: ignore[method-assign]
    assert not closure_first(plain, mocked)
    counting = CountingStrategy()
    counting.precision = Precision32()
    assert not closure_first(counting, torch.optim.SGD(params, lr=0.1))


def test_a_subclassed_optimizer_still_gets_the_closure_and_lbfgs_still_trains():
    class Subclassed(Net):
        def configure_optimizers(self) -> Any:
            self.optimizer = StepRecordingSGD(self.parameters(), lr=0.1)
            return self.optimizer

    class Lbfgs(Net):
        def configure_optimizers(self) -> Any:
            return torch.optim.LBFGS(self.parameters(), lr=0.1, max_iter=3)

    data = DataLoader(TensorDataset(torch.randn(4 * BATCHES, 4)), batch_size=4)
    flags = dict(max_epochs=1, logger=False, enable_progress_bar=False,
                 enable_checkpointing=False, enable_model_summary=False)
    module = Subclassed()
    fulmen.Trainer(**flags).fit(module, data)
    assert module.optimizer.closures == BATCHES
    lbfgs = Lbfgs()
    before = lbfgs.layer.weight.detach().clone()
    trainer = fulmen.Trainer(**flags)
    trainer.fit(lbfgs, data)
    assert trainer.global_step == BATCHES and not torch.equal(before, lbfgs.layer.weight)


def test_stepping_after_the_closure_trains_exactly_as_step_with_the_closure():
    """The same weights, bit for bit, as a plain loop through ``optimizer.step(closure)``."""
    torch.manual_seed(0)
    data = torch.randn(4 * BATCHES, 4)
    module = Net()
    reference = copy.deepcopy(module.layer)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for batch in data.split(4):
        def closure(batch: torch.Tensor = batch) -> torch.Tensor:
            loss = reference(batch).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            return loss

        optimizer.step(closure)
    fulmen.Trainer(max_epochs=1, logger=False, enable_progress_bar=False,
                   enable_checkpointing=False, enable_model_summary=False).fit(
        module, DataLoader(TensorDataset(data), batch_size=4))
    assert torch.equal(module.layer.weight, reference.weight)
    assert torch.equal(module.layer.bias, reference.bias)
