"""The ``fulmen`` logger's default set-up and the run banner."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import fulmen
from fulmen.kernel.banner import banner

SCRIPT = """
import logging, os
from fulmen.status import configure_logging
{setup}
configure_logging().info("hello")
configure_logging().debug("details")
"""


def run(setup: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-c", SCRIPT.format(setup=setup)], text=True,
                          capture_output=True, timeout=60, env={**os.environ, **env})


def test_status_goes_to_stderr_with_a_rank_prefix_only_when_there_are_several_ranks():
    assert run().stderr == "hello\n"
    assert run(RANK="1", WORLD_SIZE="2").stderr == "[rank 1/2] hello\n"
    assert run(RANK="0", WORLD_SIZE="1").stderr == "hello\n"


def test_fulmen_log_level_and_the_applications_logging_configuration_decide():
    assert run(FULMEN_LOG_LEVEL="debug").stderr == "hello\ndetails\n"
    assert run(FULMEN_LOG_LEVEL="WARNING").stderr == ""
    configured = run("logging.basicConfig(format='APP %(name)s: %(message)s', level='INFO')")
    assert configured.stderr == "APP fulmen: hello\n"  # the application's handler, not ours
    bad = run(FULMEN_LOG_LEVEL="loud")
    assert bad.returncode != 0 and "FULMEN_LOG_LEVEL='loud': use one of DEBUG, INFO" in bad.stderr


def test_the_banner_names_every_composed_part_and_where_it_came_from(monkeypatch):
    monkeypatch.setenv("FULMEN_GLOBAL_SEED", "7")
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", logger=False,
                             precision="bf16-mixed")
    text = banner(trainer, "fit", log_dir="runs/v0", checkpoint_dir="runs/v0/checkpoints",
                  resumed_from="last.ckpt", progress="epoch 1, step 40")
    lines = text.splitlines()
    assert lines[0] == "fulmen fit:"
    assert any(x.split()[:2] == ["strategy", "ddp_spawn"] and "fulmen-strategies" in x
               for x in lines)
    assert any(x.split()[:2] == ["precision", "bf16-mixed"] and "fulmen-precision" in x
               for x in lines)
    assert any(x.split()[:2] == ["environment", "local"] for x in lines)
    assert "2 per node [0, 1] x 1 node(s) = world size 2" in text
    assert "resuming     last.ckpt at epoch 1, step 40" in text and "seed         7" in text


@pytest.fixture(autouse=True)
def _restore_fulmen_logger():
    logger = logging.getLogger("fulmen")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    logger.handlers[:], logger.level, logger.propagate = handlers, level, propagate
