"""The ``torchft`` strategy by name and by instance: arguments and torchft's environment variables
resolved and checked before anything starts (errors say what was given, why, and what would
work), the conformance kit, and a cheap import."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch

import fulmen
from fulmen.testing import check

pytest.importorskip("torchft")

from fulmen_torchft import StopAtCommittedSteps, TorchFTStrategy

pytestmark = pytest.mark.timeout(120)

ENV = ("REPLICA_GROUP_ID", "NUM_REPLICA_GROUPS", "TORCHFT_LIGHTHOUSE", "TORCHFT_LIGHTHOUSE_PORT")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def trainer(**kwargs: Any) -> fulmen.Trainer:
    return fulmen.Trainer(**{"accelerator": "cpu", "devices": 1, "logger": False,
                             "enable_progress_bar": False, "enable_model_summary": False,
                             "enable_checkpointing": False, "max_steps": 2, **kwargs})


def test_by_name_with_torchft_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLICA_GROUP_ID", "2")
    monkeypatch.setenv("NUM_REPLICA_GROUPS", "5")
    monkeypatch.setenv("TORCHFT_LIGHTHOUSE", "http://lighthouse.example:29510")
    strategy = trainer(strategy="torchft").strategy
    assert isinstance(strategy, TorchFTStrategy) and strategy.name == "torchft"
    settings = strategy.settings
    assert (settings.replica_group_id, settings.num_replica_groups) == (2, 5)
    assert settings.min_replicas == 3  # a majority of 5
    assert settings.lighthouse == "http://lighthouse.example:29510"
    assert not settings.starts_lighthouse
    assert strategy.data_parallel_size == 5 and strategy.data_parallel_rank == 2


def test_defaults_one_group_that_starts_its_own_lighthouse() -> None:
    settings = TorchFTStrategy().settings
    assert (settings.replica_group_id, settings.num_replica_groups, settings.min_replicas) == \
        (0, 1, 1)
    assert settings.starts_lighthouse and settings.lighthouse_bind == "[::]:0"
    assert (settings.join_timeout.total_seconds(), settings.heartbeat_timeout.total_seconds()) \
        == (60, 5)  # torchft's lighthouse defaults
    three = TorchFTStrategy(num_replica_groups=3, replica_group_id=1, lighthouse_port=30000)
    assert three.settings.min_replicas == 2
    assert not three.settings.starts_lighthouse  # group 0 starts it; the others find it
    assert three.settings.lighthouse_for_others() == "http://localhost:30000"


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"min_replicas": 4, "num_replica_groups": 3},
     ["min_replicas=4 with num_replica_groups=3", "1..3 groups", "a majority, 2"]),
    ({"min_replicas": 0}, ["min_replicas=0", "1..1"]),
    ({"replica_group_id": 3, "num_replica_groups": 3},
     ["replica_group_id=3 with num_replica_groups=3", "0..2", "REPLICA_GROUP_ID"]),
    ({"num_replica_groups": 0}, ["num_replica_groups=0", "1 or more"]),
    ({"lighthouse": "lighthouse:29510"},
     ["lighthouse='lighthouse:29510'", "'http://host:29510'"]),
    ({"lighthouse_port": 70000}, ["lighthouse_port=70000", "1..65535"]),
    ({"timeout": 0}, ["timeout=0", "positive number of seconds"]),
    ({"heartbeat_timeout": -1}, ["heartbeat_timeout=-1"]),
    ({"lighthouse": "http://lh:29510", "join_timeout": 5},
     ["join_timeout=5 with lighthouse 'http://lh:29510'", "torchft_lighthouse --join_timeout_ms"]),
    ({"process_group": "nccl"}, ["process_group='nccl'", "'gloo', 'baby_gloo'"]),
    ({"async_quorum": "yes"}, ["async_quorum='yes'", "True or False"]),
])
def test_bad_arguments_are_refused_at_construction(kwargs: dict[str, Any],
                                                   words: list[str]) -> None:
    with pytest.raises(fulmen.ConfigurationError) as info:
        TorchFTStrategy(**kwargs)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_bad_environment_is_refused_when_the_trainer_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every problem in one error, before any process, store or lighthouse starts."""
    monkeypatch.setenv("NUM_REPLICA_GROUPS", "three")
    monkeypatch.setenv("TORCHFT_LIGHTHOUSE", "localhost")
    with pytest.raises(fulmen.ConfigurationError) as info:
        trainer(strategy="torchft")
    message = str(info.value)
    assert "NUM_REPLICA_GROUPS='three'" in message and "not a whole number" in message
    assert "TORCHFT_LIGHTHOUSE='localhost'" in message


def test_manual_optimization_is_refused() -> None:
    class Manual(fulmen.Module):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch: Any, batch_idx: int) -> None:
            raise AssertionError("not reached")

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4, 2)))
    with pytest.raises(fulmen.ConfigurationError, match="automatic_optimization = False"):
        trainer(strategy="torchft").fit(Manual(), data)


def test_stop_at_committed_steps_needs_the_torchft_strategy() -> None:
    with pytest.raises(fulmen.ConfigurationError, match="steps=0"):
        StopAtCommittedSteps(0)
    from fulmen.demos.boring_classes import BoringModel

    model = BoringModel()
    with pytest.raises(fulmen.ConfigurationError, match="strategy 'single_device'"):
        trainer(callbacks=[StopAtCommittedSteps(3)]).fit(model)


def test_importing_the_plugin_imports_neither_torch_nor_torchft() -> None:
    code = ("import sys, fulmen_torchft, fulmen_torchft.plugin; "
            "print(sorted(m for m in ('torch', 'torchft') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.timeout(240)
def test_the_strategy_passes_the_conformance_kit() -> None:
    """Trainer and Lite on one process and on two (one replica group of two processes: the
    group's own process group, then torchft's replica dimension), checkpoints, collectives,
    no_backward_sync."""
    report = check(["torchft"], timeout=120)
    failures = [f"{r.clause}: {r.detail}" for r in report.results if r.status != "pass"]
    assert not failures, failures


def test_replica_state_carries_what_is_registered() -> None:
    """A peer's replica state loads the module, the optimizers and what was registered; a peer
    that registered less is an error naming what is missing."""
    strategy = TorchFTStrategy()
    with pytest.raises(fulmen.ConfigurationError, match="name=''"):
        strategy.register_replica_state("", dict, print)
    with pytest.raises(fulmen.ConfigurationError, match="must be callables"):
        strategy.register_replica_state("counter", {}, print)  # type: ignore[arg-type]
    counter = {"seen": 0}
    strategy.register_replica_state("counter", lambda: dict(counter), counter.update)
    peer_state = {"module": {}, "optimizers": [], "extras": {"counter": {"seen": 7}}}
    strategy.module = torch.nn.Identity()  # what setup_module sets (no parameters)
    strategy.load_replica_state(peer_state)
    assert counter == {"seen": 7}
    assert strategy.replica_state()["extras"] == {"counter": {"seen": 7}}
    with pytest.raises(fulmen.FulmenError, match="sent no 'counter' state"):
        strategy.load_replica_state({**peer_state, "extras": {}})
