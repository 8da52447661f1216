"""Failures never hang: a crashing rank ends the job, a bad pickle is named, divergence is
caught, and mismatched process counts are refused."""

from __future__ import annotations

import time

import pytest

from conftest import no_process_left

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
