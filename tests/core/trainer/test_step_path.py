"""Every batch goes one way: through the strategy's ``step``, ``backward`` and
``optimizer_step`` and the precision's ``forward_context``, ``backward`` and ``optimizer_step``
(an override in a strategy or precision is called on every batch, by the Trainer and by Lite),
and every optimizer is stepped with the closure, as in Lightning: its step pre-hooks run before
the forward, its post-hooks after the update."""

from __future__ import annotations

import contextlib
import copy
from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
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
    # a strategy that overrides step gets Lite's forwards as step("forward") (Strategy.step)
    assert strategy.counts == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert precision.counts["backward"] == 3 and precision.counts["optimizer_step"] == 3


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


class Ordered(Net):
    """Records the order of the optimizer's step pre/post-hooks and the step's stages."""

    def __init__(self, accumulate: int = 1) -> None:
        super().__init__()
        self.events: list[str] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.events.append(f"training_step {batch_idx}")
        return super().training_step(batch, batch_idx)

    def on_before_zero_grad(self, optimizer: Any) -> None:
        self.events.append("on_before_zero_grad")

    def on_before_backward(self, loss: torch.Tensor) -> None:
        self.events.append("on_before_backward")

    def on_after_backward(self) -> None:
        self.events.append("on_after_backward")

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        self.events.append("on_before_optimizer_step")

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        optimizer.register_step_pre_hook(lambda *_: self.events.append("step pre-hook"))
        optimizer.register_step_post_hook(lambda *_: self.events.append("step post-hook"))
        return optimizer


def test_an_optimizer_step_pre_hook_runs_before_the_forward_as_in_lightning():
    """Lightning steps ``optimizer.step(closure)``: the pre-hooks run first, then the closure
    (training_step, zero_grad, backward), ``on_before_optimizer_step``, the update, the
    post-hooks. With accumulation the batches inside the window run the closure alone."""
    flags = dict(max_epochs=1, logger=False, enable_progress_bar=False,
                 enable_checkpointing=False, enable_model_summary=False)
    data = DataLoader(TensorDataset(torch.randn(4 * 2, 4)), batch_size=4)
    module = Ordered()
    fulmen.Trainer(**flags).fit(module, data)
    one = ["step pre-hook", "training_step {}", "on_before_zero_grad", "on_before_backward",
           "on_after_backward", "on_before_optimizer_step", "step post-hook"]
    assert module.events == [e.format(0) for e in one] + [e.format(1) for e in one]
    module = Ordered()
    fulmen.Trainer(accumulate_grad_batches=2, **flags).fit(module, data)
    assert module.events == [
        "training_step 0", "on_before_zero_grad", "on_before_backward", "on_after_backward",
        "step pre-hook", "training_step 1", "on_before_backward", "on_after_backward",
        "on_before_optimizer_step", "step post-hook"]


def test_torch_s_own_optimizers_get_the_closure_too():
    class Closures(Net):
        def configure_optimizers(self) -> Any:
            self.optimizer = torch.optim.AdamW(self.parameters())
            self.closures = 0
            original = self.optimizer.step

            def step(closure: Any = None) -> Any:
                self.closures += closure is not None
                return original(closure)

            self.optimizer.step = step  # type: ignore[method-assign]
            return self.optimizer

    module = Closures()
    fulmen.Trainer(max_epochs=1, logger=False, enable_progress_bar=False,
                   enable_checkpointing=False, enable_model_summary=False).fit(
        module, DataLoader(TensorDataset(torch.randn(4 * BATCHES, 4)), batch_size=4))
    assert module.closures == BATCHES


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


def test_the_trainer_trains_exactly_as_step_with_the_closure():
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
