"""Failures never hang: a crashing rank ends the job, a bad pickle is named, divergence is
caught, and mismatched process counts are refused."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from processes import alive, clean_environment, descendants

from conftest import SCRIPTS, no_process_left

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.mark.parametrize(("strategy", "rank"), [("ddp", 1), ("ddp", 0), ("ddp_spawn", 1),
                                                ("ddp_fork", 0)])
def test_a_crashing_rank_ends_the_job_with_its_traceback(run_script, strategy, rank):
    run = run_script("train.py", "--strategy", strategy, "--crash-rank", str(rank),
                     "--epochs", "5", timeout=90)
    assert run.returncode != 0
    assert f"RuntimeError: rank {rank} crashes on purpose" in run.stderr
    assert run.seconds < 30 + 10  # start-up included
    time.sleep(0.5)
    assert no_process_left(str(run.out))


def test_spawn_names_what_cannot_be_pickled(run_script):
    run = run_script("train.py", "--strategy", "ddp_spawn", "--lambda")
    assert run.returncode != 0
    assert "ConfigurationError: strategy='ddp_spawn' pickles the model to start its worker " \
           "processes, and model.fn: " in run.stderr
    assert "<lambda> cannot be pickled" in run.stderr
    assert "use strategy='ddp', which starts processes without pickling" in run.stderr


def test_the_same_script_works_under_ddp_with_an_unpicklable_model(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--lambda", "--epochs", "1")
    assert run.returncode == 0, run.stderr


def test_divergent_collectives_are_named_in_debug_mode(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--diverge", "--epochs", "1",
                     env={"FULMEN_DEBUG_DISTRIBUTED": "1", "FULMEN_DEBUG_TIMEOUT": "5"},
                     timeout=90)
    assert run.returncode != 0
    assert "CollectiveMismatchError" in run.stderr
    assert ("differs between ranks" in run.stderr) or ("never arrived" in run.stderr)
    assert "train.py" in run.stderr  # the call site


def test_a_world_size_that_disagrees_with_devices_is_refused(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--devices", "2", "--epochs", "1",
                     env={"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "3",
                          "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999"})
    assert run.returncode != 0
    assert "the processes were already started with world size 3" in run.stderr
    assert "devices=2 x num_nodes=1 asks for 2" in run.stderr


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9 main"])
@pytest.mark.parametrize(("strategy", "workers"), [("ddp", 1), ("ddp_spawn", 2)])
def test_stopping_the_main_process_stops_every_rank(tmp_path, strategy, workers, how):
    """Ctrl-C: a terminal sends SIGINT to its foreground process group, but the ranks run in
    sessions of their own (as torchrun's workers do), so the main process must stop them.
    SIGKILL of the main process alone: the ranks die with it."""
    out = tmp_path / "out"
    out.mkdir()
    main = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "train.py"), "--strategy", strategy, "--epochs",
         "100000", "--out", str(out)], cwd=tmp_path, env=clean_environment([SCRIPTS]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    everyone: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(list(out.glob("training-rank*"))) < 2 and time.monotonic() < deadline:
            assert main.poll() is None, main.communicate()
            time.sleep(0.2)
        everyone = descendants(main.pid)
        assert len(everyone) >= workers, everyone
        if how == "ctrl-c":
            os.killpg(main.pid, signal.SIGINT)
        else:
            main.kill()
        _, stderr = main.communicate(timeout=30)
        time.sleep(1)
        left = [p for p in everyone if alive(p)]
    finally:
        for pid in [main.pid, *everyone]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert main.returncode != 0
    assert how != "ctrl-c" or "KeyboardInterrupt" in stderr
    assert not left, stderr
