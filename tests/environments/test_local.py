import pytest

import fulmen
from fulmen import ConfigurationError
from fulmen_environments import LocalEnvironment


def test_defaults_without_launcher_variables(monkeypatch):
    for var in ("LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    env = LocalEnvironment()
    assert not env.creates_processes_externally
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (1, 0, 0, 0)
    assert env.main_address == "127.0.0.1"
    port = env.main_port
    assert 1 <= port <= 65535 and env.main_port == port  # chosen once
    assert LocalEnvironment.detect()


def test_reads_what_a_launcher_set(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("NODE_RANK", "2")
    monkeypatch.setenv("MASTER_ADDR", "10.1.2.3")
    monkeypatch.setenv("MASTER_PORT", "29500")
    env = LocalEnvironment()
    env.set_world_size(8)
    env.set_global_rank(5)
    assert env.creates_processes_externally
    assert (env.local_rank(), env.node_rank(), env.world_size(), env.global_rank()) == (1, 2, 8, 5)
    assert (env.main_address, env.main_port) == ("10.1.2.3", 29500)


@pytest.mark.parametrize(("var", "value", "message"), [
    ("MASTER_PORT", "70000", "MASTER_PORT='70000' must be a port number between 1 and 65535"),
    ("MASTER_PORT", "http", "MASTER_PORT='http' must be a port number"),
    ("LOCAL_RANK", "-1", "LOCAL_RANK='-1' must be a non-negative integer"),
])
def test_bad_launcher_variables_are_named(monkeypatch, var, value, message):
    monkeypatch.setenv(var, value)
    env = LocalEnvironment()
    with pytest.raises(ConfigurationError, match=message):
        env.main_port if var == "MASTER_PORT" else env.local_rank()


class ForgetsLocalRank(fulmen.ClusterEnvironment):
    """A user environment that does not read LOCAL_RANK although fulmen launches processes."""

    creates_processes_externally = False
    main_address, main_port = "127.0.0.1", 29500

    @staticmethod
    def detect() -> bool:
        return True

    def world_size(self) -> int:
        return 2

    def set_world_size(self, size: int) -> None:
        pass

    def global_rank(self) -> int:
        return 0

    def set_global_rank(self, rank: int) -> None:
        pass

    def local_rank(self) -> int:
        return 0

    def node_rank(self) -> int:
        return 0


def test_a_launched_process_checks_the_custom_environment_reads_local_rank(monkeypatch):
    """In a process fulmen's launcher started, a custom environment that ignores LOCAL_RANK
    would make two processes claim the same rank: say so instead of hanging."""
    from fulmen_strategies.launchers.script import LAUNCHED

    monkeypatch.setenv(LAUNCHED, "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp",
                             plugins=[ForgetsLocalRank()], logger=False)
    with pytest.raises(fulmen.ConfigurationError, match=r"launched by fulmen as local rank 1 .*"
                                                        r"'forgets_local_rank' cluster environment"
                                                        r"'s local_rank\(\) returns 0"):
        trainer.strategy.launch(lambda: None)
