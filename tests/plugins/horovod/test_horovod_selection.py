"""What works without Horovod: listing, the errors that say how to get it, environment detection.

These run everywhere; Horovod itself is hidden where it is installed."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

import fulmen
from fulmen import ConfigurationError

HOROVOD_ENV = {"HOROVOD_HOSTNAME": "localhost", "HOROVOD_RANK": "1", "HOROVOD_SIZE": "4",
               "HOROVOD_LOCAL_RANK": "1", "HOROVOD_LOCAL_SIZE": "2", "HOROVOD_CROSS_RANK": "0",
               "HOROVOD_CROSS_SIZE": "2", "HOROVOD_GLOO_RENDEZVOUS_ADDR": "10.0.0.1",
               "HOROVOD_GLOO_RENDEZVOUS_PORT": "4321", "HOROVOD_CONTROLLER": "gloo"}


@pytest.fixture
def no_horovod(monkeypatch):
    """Horovod cannot be imported (None in sys.modules makes the import fail)."""
    for name in ("horovod", "horovod.torch", "horovod.torch.mpi_lib_v2"):
        monkeypatch.setitem(sys.modules, name, None)


def test_strategy_without_horovod_says_make_install_horovod(no_horovod):
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(strategy="horovod", accelerator="cpu", devices=1, logger=False)
    message = str(info.value)
    assert "strategy='horovod'" in message
    assert "fulmen-horovod" in message and "make install-horovod" in message
    assert "strategy='ddp'" in message  # what works instead


def test_lite_without_horovod_says_make_install_horovod(no_horovod):
    with pytest.raises(ConfigurationError, match="make install-horovod"):
        fulmen.Lite(strategy="horovod", accelerator="cpu", devices=1)


def test_without_the_plugin_distribution_the_name_points_to_it(plugin_env):
    """fulmen-horovod not installed: the kernel's table names the distribution and command."""
    real = importlib.metadata.entry_points

    def without_horovod(**kwargs):
        return [ep for ep in real(**kwargs)
                if ep.dist is None or ep.dist.metadata["Name"] != "fulmen-horovod"]

    plugin_env.setattr(fulmen.kernel.manager.metadata, "entry_points", without_horovod)
    fulmen.reload_plugins()
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(strategy="horovod", accelerator="cpu", devices=1, logger=False)
    message = str(info.value)
    assert "'fulmen-horovod'" in message and "pip install 'fulmen[horovod]'" in message
    assert "fulmen-build-horovod" in message


def test_listing_plugins_imports_neither_horovod_nor_the_strategy():
    code = ("import sys, fulmen; fulmen.get_plugin_manager().catalog(); "
            "names = fulmen.get_plugin_manager().catalog().names('strategy'); "
            "assert 'horovod' in names, names; "
            "bad = [m for m in sys.modules if m.startswith('horovod') or "
            "m in ('fulmen_horovod.strategy', 'fulmen_horovod.environment')]; "
            "assert not bad, bad; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_horovodrun_variables_select_the_horovod_environment():
    manager = fulmen.get_plugin_manager()
    name, _ = manager.first_result("fulmen_detect_environment", environ=HOROVOD_ENV)
    assert name == "horovod"
    others = {k: v for k, v in HOROVOD_ENV.items() if k != "HOROVOD_RANK"}
    name, _ = manager.first_result("fulmen_detect_environment", environ=others)
    assert name != "horovod"


def test_horovod_environment_reads_ranks_from_horovodrun_variables():
    from fulmen_horovod.environment import HorovodEnvironment

    env = HorovodEnvironment(HOROVOD_ENV)
    assert env.creates_processes_externally
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (4, 1, 1, 0)
    assert (env.main_address, env.main_port) == ("10.0.0.1", 4321)
    env.set_world_size(99)  # horovodrun decided; the strategy's numbers are ignored
    env.set_global_rank(7)
    assert (env.world_size(), env.global_rank()) == (4, 1)
    env.validate_settings(num_devices=1, num_nodes=1)


def test_horovod_environment_rejects_impossible_ranks():
    from fulmen_horovod.environment import HorovodEnvironment

    env = HorovodEnvironment({**HOROVOD_ENV, "HOROVOD_RANK": "4"})
    with pytest.raises(ConfigurationError, match="rank 4 in a world of 4"):
        env.validate_settings(num_devices=1, num_nodes=1)
    with pytest.raises(ConfigurationError, match="HOROVOD_SIZE='x'"):
        HorovodEnvironment({**HOROVOD_ENV, "HOROVOD_SIZE": "x"}).world_size()


def test_bad_strategy_arguments_are_configuration_errors(no_horovod):
    from fulmen_horovod.strategy import HorovodStrategy

    with pytest.raises(ConfigurationError, match="backward_passes_per_step=0"):
        HorovodStrategy(backward_passes_per_step=0)
    with pytest.raises(ConfigurationError, match="compression='zip'"):
        HorovodStrategy(compression="zip")


def test_listing_says_what_the_plugin_needs_without_importing_it(no_horovod, capsys):
    """The record's ``requires`` is checked with find_spec: no import, and the listing says so."""
    from fulmen.cli import main

    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "active, but needs horovod (not installed)" in out
    assert "[needs horovod (not installed)]" in out
