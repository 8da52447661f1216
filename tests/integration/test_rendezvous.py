"""Joining the process group has a deadline of its own (the rendezvous timeout, separate from the
collective ``timeout``): a rank that never comes is an error naming it, the address and port,
and what to check — never a wait as long as the collective timeout."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from processes import clean_environment

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

LONELY = """
import sys

import fulmen
from fulmen import Launcher
from fulmen_strategies import DDPStrategy
from tiny_models import TinyModule, loader


class OneOnly(Launcher):
    def launch(self, function, *args, **kwargs):
        return function(*args, **kwargs)  # starts none of the other ranks


class Lonely(DDPStrategy):
    def create_launcher(self):
        return OneOnly(self)


given = float(sys.argv[1]) if len(sys.argv) > 1 else None
trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=Lonely(rendezvous_timeout=given),
                         max_epochs=1, logger=False, enable_progress_bar=False,
                         enable_checkpointing=False)
trainer.fit(TinyModule(), loader())
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(tmp_path: Path, code: str, *args: str, **env: str
        ) -> tuple[subprocess.CompletedProcess[str], float]:
    script = tmp_path / "lonely.py"
    script.write_text(textwrap.dedent(code))
    environment = {**clean_environment([]), "OMP_NUM_THREADS": "1", **env}
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=90, env=environment, cwd=tmp_path, start_new_session=True)
    return done, time.monotonic() - start


@pytest.mark.parametrize("how", ["environment", "argument"])
def test_a_launcher_that_starts_too_few_processes_fails_within_the_rendezvous_timeout(tmp_path,
                                                                                       how):
    port = free_port()
    args, env = (("2",), {}) if how == "argument" else ((), {"FULMEN_RENDEZVOUS_TIMEOUT": "2"})
    done, seconds = run(tmp_path, LONELY, *args, MASTER_PORT=str(port), **env)
    assert done.returncode != 0
    assert "fulmen.errors.RendezvousError: strategy 'lonely', rank 0 of 2: joining the process " \
           f"group at 127.0.0.1:{port} timed out after 2 s: 1 of 2 processes joined; missing " \
           "rank(s): 1. Check that all 2 processes were started" in done.stderr, done.stderr
    assert "FULMEN_RENDEZVOUS_TIMEOUT=<seconds>" in done.stderr
    assert seconds < 45  # the collective timeout (30 min) is not what ended it


def test_a_rank_that_cannot_reach_the_main_process_names_the_address(tmp_path):
    port = free_port()  # nobody listens there
    done, seconds = run(tmp_path, LONELY, MASTER_PORT=str(port), LOCAL_RANK="1", RANK="1",
                        WORLD_SIZE="2", FULMEN_RENDEZVOUS_TIMEOUT="2")
    assert done.returncode != 0
    assert ("RendezvousError: strategy 'lonely', rank 1 of 2: could not reach the main "
            f"process's store at 127.0.0.1:{port} within 2 s") in done.stderr, done.stderr
    assert seconds < 45


def test_a_bad_rendezvous_timeout_is_a_configuration_error(monkeypatch):
    from fulmen import ConfigurationError
    from fulmen_strategies import DDPStrategy

    with pytest.raises(ConfigurationError, match=r"DDPStrategy\(rendezvous_timeout=0\): the "
                       r"rendezvous timeout must be a positive number of seconds"):
        DDPStrategy(rendezvous_timeout=0)
    monkeypatch.setenv("FULMEN_RENDEZVOUS_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match=r"FULMEN_RENDEZVOUS_TIMEOUT='soon': the "
                       "rendezvous timeout must be"):
        DDPStrategy()
    monkeypatch.setenv("FULMEN_RENDEZVOUS_TIMEOUT", "7.5")
    assert DDPStrategy().rendezvous_timeout.total_seconds() == 7.5
    assert DDPStrategy(rendezvous_timeout=3).rendezvous_timeout.total_seconds() == 3
