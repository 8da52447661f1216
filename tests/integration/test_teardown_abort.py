"""torch's C++ teardown sometimes aborts a rank after Python has finished ("terminate called
without an active exception", SIGABRT). Under ``ddp`` a child that finished its script and is
then aborted has done its work: the job succeeds and says so. A rank that aborts before the end
of its script still fails the job."""

from __future__ import annotations

import time

import pytest

from conftest import no_process_left

pytestmark = pytest.mark.timeout(180)


def test_a_child_aborted_after_its_script_finished_does_not_fail_the_job(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--abort-at-exit", "1", timeout=120)
    assert run.returncode == 0, run.stderr
    assert "local rank 1 finished its script, then was aborted in torch's interpreter " \
           "teardown (SIGABRT" in run.stderr
    assert (run.out / "rank1.json").exists()  # it did finish its work
    time.sleep(0.5)
    assert no_process_left(str(run.out))


def test_a_child_aborted_during_training_fails_the_job(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--abort-in-step", "1", "--epochs", "5",
                     timeout=120)
    assert run.returncode != 0
    assert "local rank 1 exited with status -6" in run.stderr
    assert "finished its script" not in run.stderr
    time.sleep(0.5)
    assert no_process_left(str(run.out))
