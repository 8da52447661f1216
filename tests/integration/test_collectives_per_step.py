"""The steady state of a 2-process ``ddp`` run calls no collective the user did not ask for.

Lightning's Trainer broadcasts a SIGTERM flag at every step (a third of its DDP throughput in
``tests/benchmarks/startup.py``); fulmen's preemption vote, non-finite check and logging must
not add any. Every Python collective of ``torch.distributed`` is counted over ten steps in the
middle of an epoch (``scripts/collectives_per_step.py``).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)


def test_trainer_with_default_callbacks_calls_only_the_collectives_asked_for(run_script):
    """Logging every step, a progress-bar value, an epoch mean, a logger writing every 5 steps
    and a checkpoint callback: the only collectives are the 5 all-reduces of the value logged
    with ``sync_dist=True`` on every second step."""
    run = run_script("collectives_per_step.py", "--mode", "trainer",
                     env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.output[-3000:]
    for rank in (0, 1):
        result = run.json(f"rank{rank}")
        assert result["steps"] == 10
        assert result["counts"] == {"all_reduce": 5}, result


def test_lite_loop_calls_no_collective(run_script):
    run = run_script("collectives_per_step.py", "--mode", "lite", env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.output[-3000:]
    for rank in (0, 1):
        result = run.json(f"rank{rank}")
        assert result["steps"] == 10
        assert result["counts"] == {}, result


def test_lite_loop_asking_should_stop_votes_about_every_half_second(run_script):
    """``lite.should_stop()`` at every step boundary (SIGTERM watched): the ranks' vote is one
    asynchronous all-reduce about every half second of training, not one per step."""
    from fulmen.fault_tolerance.preemption import VOTE_SECONDS

    run = run_script("collectives_per_step.py", "--mode", "lite_notices",
                     env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.output[-3000:]
    for rank in (0, 1):
        result = run.json(f"rank{rank}")
        assert result["steps"] == 10
        assert set(result["counts"]) <= {"all_reduce"}, result
        # the first two polls vote, then one vote per VOTE_SECONDS of steps
        assert result["counts"].get("all_reduce", 0) <= 1 + result["seconds"] / VOTE_SECONDS, \
            result
