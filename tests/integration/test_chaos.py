"""Chaos: jobs under ``torchrun --max-restarts`` whose ranks are SIGKILLed or sent SIGTERM at
steps a fixed seed picks, under ddp, fsdp and Lite (gloo, 2 CPU processes). Each job must end on
weights ``torch.equal`` to an uninterrupted run's, redoing at most one checkpoint interval after
a SIGKILL and nothing after a notice (the checkpoint holds the step the notice arrived at, or the
next one), and say what each resume cost."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from processes import clean_environment

from conftest import SCRIPTS
from fulmen.trainer.checkpoint import read_checkpoint

STEPS, EVERY = 30, 5
PACE = 0.1  # seconds per step at least: notices are voted on every half second
TIMEOUT = 240
pytestmark = pytest.mark.timeout(2 * TIMEOUT)


def torchrun(out: Path, strategy: str, plan: list[list[Any]], restarts: int = 3,
             pace: float = PACE, steps: int = STEPS) -> subprocess.CompletedProcess[str]:
    env = clean_environment([SCRIPTS])
    env.update(OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
         f"--max-restarts={restarts}", "--monitor-interval=0.1",
         str(SCRIPTS / "chaos_train.py"), "--out", str(out), "--strategy", strategy,
         "--steps", str(steps), "--every", str(EVERY), "--plan", json.dumps(plan),
         "--step-seconds", str(pace)],
        env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=out)


def weights(out: Path) -> dict[str, torch.Tensor]:
    if (out / "final.ckpt").is_file():
        content = torch.load(out / "final.ckpt", weights_only=True)
    else:  # fsdp: a sharded (DCP) directory
        content = read_checkpoint(out / "final.ckpt")
    state = content["state_dict"] if "state_dict" in content else content["model"]
    return {k.removeprefix("net."): v for k, v in state.items()}


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


_baselines: dict[tuple[str, int], dict[str, torch.Tensor]] = {}


def baseline(tmp_path_factory: Any, strategy: str, steps: int = STEPS
             ) -> dict[str, torch.Tensor]:
    """The uninterrupted run's weights (once per strategy, length and session)."""
    if (strategy, steps) not in _baselines:
        out = tmp_path_factory.mktemp(f"straight-{strategy}")
        done = torchrun(out, strategy, [], pace=0, steps=steps)  # the pace changes no number
        assert done.returncode == 0, done.stderr[-3000:]
        _baselines[strategy, steps] = weights(out)
    return _baselines[strategy, steps]


def check(out: Path, done: subprocess.CompletedProcess[str], reference: dict[str, torch.Tensor],
          plan: list[list[Any]], steps: int = STEPS
          ) -> list[dict[str, Any]]:
    """Finished on the reference weights; each restart redid what the interruption allows and
    said so (the Trainer and Lite alike)."""
    assert done.returncode == 0, done.stderr[-4000:]
    final = weights(out)
    assert final.keys() == reference.keys()
    assert all(torch.equal(final[k], reference[k]) for k in final), "weights differ"
    log = events(out)
    starts = [e for e in log if e["kind"] == "start"]
    assert [e["attempt"] for e in starts] == list(range(len(plan) + 1))
    resumes = [e for e in log if e["kind"] == "resumed"]
    # a kill before the first checkpoint restarts from scratch: nothing resumed, nothing to say
    assert len(resumes) == sum(s["step"] > 0 for s in starts[1:])
    by_attempt = {e["attempt"]: e for e in resumes}
    for (attempt, _, step, how), start in zip(plan, starts[1:]):
        assert start["attempt"] == attempt + 1
        if start["step"] == 0:
            assert how == "KILL" and step <= EVERY
            continue
        resumed = by_attempt[attempt + 1]
        if how == "KILL":  # at most one checkpoint interval redone (killed just before a save)
            assert 0 <= step - start["step"] <= EVERY, (step, start)
            assert resumed["steps_redone"] is not None and \
                0 <= resumed["steps_redone"] <= step - start["step"]
        else:  # every rank stopped at the checkpointed step: nothing redone
            assert start["step"] >= step and resumed["steps_redone"] == 0, (step, resumed)
            assert resumed["preemption"]["checkpoint_step"] == start["step"]
        assert resumed["recovery_seconds"] > 0
    assert log[-1]["kind"] == "done" and log[-1]["step"] == steps
    return log


def seeded_plan(seed: int, kinds: list[str], steps: int = STEPS) -> list[list[Any]]:
    """One interruption per attempt, of a random rank at a random step after the previous
    interruption's (the restarted job must reach it), each in its share of the run; a notice
    early enough that the ranks' vote, every half second, agrees before the run ends."""
    rng = random.Random(seed)
    plan: list[list[Any]] = []
    end = steps - 15  # 1.5 s of steps after the last interruption
    share = (end - 2) // len(kinds)
    for attempt, how in enumerate(kinds):
        first = 2 + attempt * share
        plan.append([attempt, rng.randrange(2), rng.randrange(first, first + share), how])
    return plan


def test_ddp_under_torchrun_survives_a_sigkill_then_a_sigterm(tmp_path, tmp_path_factory):
    """The issue's "done when": a rank SIGKILLed at a random step (at most one checkpoint
    interval redone), then, in the restarted job, SIGTERM to one rank (one checkpoint at the
    same step on every rank, nothing redone); the job ends on the uninterrupted weights."""
    plan = seeded_plan(37, ["KILL", "TERM"])
    done = torchrun(tmp_path, "ddp", plan)
    check(tmp_path, done, baseline(tmp_path_factory, "ddp"), plan)
    assert (tmp_path / "hpc_ckpt_1.ckpt").is_file()  # the notice's


@pytest.mark.parametrize("strategy", [
    "fsdp", pytest.param("ddp", marks=pytest.mark.slow)])
def test_sigterm_to_one_rank_checkpoints_every_rank_at_one_step(tmp_path, tmp_path_factory,
                                                               strategy):
    plan = seeded_plan(11, ["TERM"])
    done = torchrun(tmp_path, strategy, plan)
    log = check(tmp_path, done, baseline(tmp_path_factory, strategy), plan)
    (resumed,) = [e for e in log if e["kind"] == "resumed"]
    assert resumed["preemption"]["save_seconds"] > 0
    assert resumed["preemption"]["window"] == 30.0  # torchrun's
    hpc = tmp_path / "hpc_ckpt_1.ckpt"
    assert hpc.exists() and not (tmp_path / "hpc_ckpt_2.ckpt").exists()  # one checkpoint


def test_sigterm_to_one_lite_rank_stops_every_rank_at_one_step(tmp_path, tmp_path_factory):
    """Lite's own loop (``lite.should_stop(step)``): SIGTERM to one rank at a seeded step; every
    rank sees True after the same step, one checkpoint holds it, the relaunch resumes with
    nothing redone and ends on the uninterrupted weights, and the resume was measured."""
    plan = seeded_plan(13, ["TERM"])
    done = torchrun(tmp_path, "lite", plan)
    log = check(tmp_path, done, baseline(tmp_path_factory, "lite"), plan)
    stopping = [e for e in log if e["kind"] == "stopping"]
    assert sorted(e["rank"] for e in stopping) == [0, 1]
    assert len({e["step"] for e in stopping}) == 1  # the same step on every rank
    (resumed,) = [e for e in log if e["kind"] == "resumed"]
    assert resumed["checkpoint_step"] == stopping[0]["step"] >= plan[0][2]
    assert resumed["preemption"]["window"] == 30.0 and resumed["preemption"]["save_seconds"] > 0


@pytest.mark.slow
def test_a_sigkilled_lite_rank_under_torchrun_finishes_on_the_uninterrupted_weights(
        tmp_path, tmp_path_factory):
    plan = seeded_plan(5, ["KILL"])
    done = torchrun(tmp_path, "lite", plan)
    check(tmp_path, done, baseline(tmp_path_factory, "lite"), plan)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["KILL", "TERM"])
@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "lite"])
def test_many_interruptions(tmp_path, tmp_path_factory, strategy, how):
    steps = 80  # room for three notices: each stops the job up to a second after it arrives
    plan = seeded_plan(2026, [how] * 3, steps)
    done = torchrun(tmp_path, strategy, plan, restarts=3, steps=steps)
    check(tmp_path, done, baseline(tmp_path_factory, strategy, steps), plan, steps=steps)
