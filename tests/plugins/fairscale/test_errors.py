"""Bad input is a ConfigurationError that says what was given and what would work; a disabled
plugin says so; listing the plugins imports neither torch nor fairscale."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import torch

import fulmen
from fulmen_fairscale import PipeStrategy, ShardedDDPStrategy

pytestmark = pytest.mark.timeout(120)


def trainer(strategy: Any, **kwargs: Any) -> fulmen.Trainer:
    return fulmen.Trainer(**{"accelerator": "cpu", "devices": 2, "strategy": strategy,
                             "logger": False, "enable_progress_bar": False,
                             "enable_model_summary": False, "enable_checkpointing": False,
                             "max_steps": 1, **kwargs})


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"strategy": "ddp_sharded", "accelerator": "mps"},
     ["'ddp_sharded' does not run on accelerator 'mps'", "'cpu', 'cuda'"]),
    ({"strategy": "ddp_sharded", "precision": "64-true"},
     ["'ddp_sharded' does not support precision '64-true'", "'bf16-mixed'"]),
    ({"strategy": ShardedDDPStrategy(reduce_buffer_size=2 ** 20)},
     ["reduce_buffer_size=1048576", "use reduce_buffer_size=0"]),
    ({"strategy": PipeStrategy(balance=[1, 2, 2])},
     ["balance=[1, 2, 2]) has 3 partitions but devices=2", "devices=3"]),
    ({"strategy": "pipe", "precision": "bf16-mixed"},
     ["'pipe' does not support precision 'bf16-mixed'", "'bf16-true'"]),
    ({"strategy": "pipe", "num_nodes": 2}, ["'pipe' runs on one node", "'ddp_sharded'"]),
])
def test_impossible_selections_are_refused_at_construction(kwargs, words):
    with pytest.raises(fulmen.ConfigurationError) as info:
        trainer(**kwargs)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"chunks": 0}, ["chunks=0", "positive int"]),
    ({"checkpoint": "sometimes"}, ["checkpoint='sometimes'", "'except_last'"]),
    ({"balance": [2, 0]}, ["balance=[2, 0]", "positive layer counts"]),
])
def test_bad_pipe_arguments(kwargs, words):
    with pytest.raises(fulmen.ConfigurationError) as info:
        PipeStrategy(**kwargs)
    for word in words:
        assert word in str(info.value)


def test_bad_start_method():
    with pytest.raises(fulmen.ConfigurationError, match="start_method='forkserver'"):
        ShardedDDPStrategy(start_method="forkserver")


class Steps(fulmen.Module):
    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self(batch[0]).sum()

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


class NoSequential(Steps):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


class TwoSequentials(NoSequential):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
        self.decoder = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())


class Layers(Steps):
    def __init__(self) -> None:
        super().__init__()
        self.sequential_module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(),
                                                     torch.nn.Linear(4, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sequential_module(x)


def data() -> Any:
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)),
                                       batch_size=4)


@pytest.mark.parametrize(("model", "strategy", "words"), [
    (Layers, PipeStrategy(balance=[1, 1]),
     ["balance=[1, 1]) puts 2 layers", "Layers.sequential_module has 3",
      "balance=[2, 1]"]),
    (NoSequential, "pipe", ["NoSequential has no nn.Sequential",
                            "self.sequential_module = torch.nn.Sequential(...)",
                            "module_name="]),
    (TwoSequentials, "pipe", ["several nn.Sequential attributes", "['encoder', 'decoder']",
                              "module_name="]),
    (TwoSequentials, PipeStrategy(module_name="a"),
     ["module_name='a'", "TwoSequentials.a is a Linear", "['encoder', 'decoder']"]),
])
def test_models_pipe_cannot_split(model, strategy, words):
    with pytest.raises(fulmen.ConfigurationError) as info:
        trainer(strategy).fit(model(), data())
    for word in words:
        assert word in str(info.value)


def test_module_name_picks_one_of_several():
    run = trainer(PipeStrategy(module_name="decoder", balance=[1, 1]))
    model = TwoSequentials()
    model.forward = lambda x: model.decoder(model.encoder(x))  # type: ignore[method-assign]
    run.fit(model, data())
    assert run.global_step == 1


def _subprocess(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})


@pytest.mark.parametrize("name", ["ddp_sharded", "ddp_sharded_spawn", "pipe"])
def test_a_disabled_plugin_says_so(name):
    entry_point = "pipe" if name == "pipe" else "ddp_sharded"
    done = _subprocess(
        "import fulmen\n"
        "try:\n"
        f"    fulmen.Trainer(accelerator='cpu', devices=2, strategy={name!r})\n"
        "except fulmen.ConfigurationError as exc:\n"
        "    print(exc)\n", FULMEN_DISABLE_PLUGINS=entry_point)
    assert done.returncode == 0, done.stderr
    assert name in done.stdout and "disabled" in done.stdout and entry_point in done.stdout


def test_listing_the_plugins_imports_neither_torch_nor_fairscale():
    done = _subprocess(
        "import sys, fulmen_fairscale.ddp_sharded as d, fulmen_fairscale.pipe as p\n"
        "names = [s.name for m in (d, p) for s in m.fulmen_strategies()]\n"
        "print(names, [m for m in ('torch', 'fairscale') if m in sys.modules])\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['ddp_sharded', 'ddp_sharded_spawn', 'pipe'] []"
