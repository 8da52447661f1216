"""dp and ddp2 need GPUs: on the CPU they are refused with alternatives; their step plumbing
(``*_step_end`` receiving gathered parts) is tested here without GPUs, the real thing where a
GPU is lent."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError
from fulmen_strategies import DataParallelStrategy
from fulmen_strategies.dp.strategy import mean_losses


@pytest.mark.parametrize("name", ["dp", "ddp2"])
def test_on_cpu_they_say_gpus_are_needed_and_suggest_ddp(name):
    with pytest.raises(ConfigurationError, match=rf"strategy '{name}' does not run on "
                       r"accelerator 'cpu' \(it runs on 'cuda'\). Strategies for 'cpu': 'ddp'"):
        fulmen.Trainer(strategy=name, devices=2)


def test_legacy_gpus_with_accelerator_dp_without_gpus():
    with pytest.warns(fulmen.FulmenDeprecationWarning), pytest.raises(ConfigurationError):
        fulmen.Trainer(gpus=2, accelerator="dp")


def test_default_reduction_of_gathered_parts():
    assert float(mean_losses(torch.tensor([1.0, 3.0]))) == 2.0
    out = mean_losses({"loss": torch.tensor([1.0, 3.0]), "y_hat": torch.ones(4, 2)})
    assert float(out["loss"]) == 2.0 and out["y_hat"].shape == (4, 2)


def test_step_end_receives_the_step_output():
    """The plumbing, without GPUs (DataParallel then runs the module in place)."""
    from fulmen_accelerators import CPUAccelerator
    from fulmen_environments import LocalEnvironment
    from fulmen_precision import Precision32

    seen: list[Any] = []

    class WithEnd(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return {"loss": torch.nn.functional.cross_entropy(self(x), y), "n": x.shape[0]}

        def training_step_end(self, outputs: Any) -> Any:
            seen.append(outputs["n"])
            return outputs["loss"] * 0 + 42

    strategy = DataParallelStrategy()
    strategy.attach(accelerator=CPUAccelerator(), precision=Precision32(),
                    cluster_environment=LocalEnvironment(),
                    parallel_devices=[torch.device("cpu")], num_nodes=1)
    strategy.setup_module(WithEnd())
    x, y = next(iter(loader(n=8, batch_size=8)))
    assert float(strategy.step("training_step", (x, y), 0).detach()) == 42 and seen == [8]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
def test_dp_splits_the_batch_over_two_gpus():
    sizes: list[int] = []

    class Parts(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            assert x.shape[0] <= 4  # total batch 8, 2 GPUs
            return {"loss": torch.nn.functional.cross_entropy(self(x), y),
                    "y_hat": self(x).detach()}

        def training_step_end(self, outputs: Any) -> Any:
            sizes.append(outputs["y_hat"].shape[0])
            assert outputs["loss"].shape == (2,)
            return outputs["loss"].mean()

    trainer = fulmen.Trainer(accelerator="gpu", devices=2, strategy="dp", **lean(max_epochs=1))
    trainer.fit(Parts(), loader(n=16, batch_size=8))
    assert sizes == [8, 8]
