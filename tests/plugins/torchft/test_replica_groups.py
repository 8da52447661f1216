"""Three replica groups on torchft, one killed with SIGKILL mid-training (real processes, gloo).

Each group is its own process (``scripts/replica_group.py``: Lite with ``TorchFTStrategy``),
started with torchft's environment variables (``REPLICA_GROUP_ID``, ``NUM_REPLICA_GROUPS``);
group 0 starts the lighthouse (none is given). The test kills group 1 once it has committed a few
steps, checks that groups 0 and 2 go on committing steps without it (``min_replicas`` = 2, the
default majority of 3), restarts group 1, which receives the weights and optimizer state from a
live peer (no checkpoint exists anywhere), and checks that all three end on equal weights
(``torch.equal``) after the same number of committed steps (the test names that number once
group 1 is back). It prints what it measured: how long the survivors stood still after the
kill, and how long the restarted group took from its start to its first committed step.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("torchft")

SCRIPT = Path(__file__).parent / "scripts" / "replica_group.py"
GROUPS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def read(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    lines = []
    for line in log.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by SIGKILL
            pass
    return lines


def committed(log: Path) -> int:
    steps = [e["committed"] for e in read(log) if e["event"] == "step"]
    return max(steps, default=0)


class Job:
    """The three groups' processes, their logs and outputs, and one deadline for everything."""

    def __init__(self, folder: Path, deadline: float, pace: float, api: str,
                 groups: int = GROUPS, devices: int = 1, extra: tuple[str, ...] = ()) -> None:
        self.folder, self.deadline, self.pace, self.api = folder, deadline, pace, api
        self.groups, self.devices, self.extra = groups, devices, extra
        self.steps_file = folder / "steps"
        self.port = free_port()
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def log(self, group: int) -> Path:
        return self.folder / f"group{group}.jsonl"

    def out(self, group: int) -> Path:
        return self.folder / f"group{group}.pt"

    def start(self, group: int) -> None:
        env = {**os.environ, "REPLICA_GROUP_ID": str(group), "NUM_REPLICA_GROUPS": str(self.groups),
               "TORCHFT_LIGHTHOUSE_PORT": str(self.port), "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "RUST_BACKTRACE": "0"}
        env.pop("TORCHFT_LIGHTHOUSE", None)
        with open(self.folder / f"group{group}.out", "ab") as output:
            self.processes[group] = subprocess.Popen(
                [sys.executable, str(SCRIPT), "--api", self.api,
                 "--steps-file", str(self.steps_file),
                 "--log", str(self.log(group)), "--out", str(self.out(group)),
                 "--pace", str(self.pace), "--devices", str(self.devices), *self.extra],
                env=env, stdout=output, stderr=subprocess.STDOUT, cwd=self.folder)

    def wait_until(self, what: str, condition: Any) -> None:
        while not condition():
            for group, process in self.processes.items():
                if process.poll() not in (None, 0, -signal.SIGKILL):
                    pytest.fail(f"group {group} exited with {process.returncode} while "
                                f"waiting for {what}:\n{self.output(group)}")
            if time.monotonic() > self.deadline:
                pytest.fail(f"timed out waiting for {what}; committed: "
                            f"{[committed(self.log(g)) for g in range(self.groups)]}\n"
                            + "\n".join(self.output(g) for g in range(self.groups)))
            time.sleep(0.05)

    def output(self, group: int) -> str:
        path = self.folder / f"group{group}.out"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"--- group {group}:\n" + "\n".join(text.splitlines()[-25:])

    def finish_at(self, steps: int) -> None:
        """Tell every group to stop once the job has committed ``steps`` steps."""
        part = self.folder / "steps.part"
        part.write_text(str(steps))
        part.replace(self.steps_file)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.wait()


def run_with_a_kill(folder: Path, kill_at: int, survive_for: int, then: int, pace: float,
                    budget: float, api: str = "lite", extra: tuple[str, ...] = ()
                    ) -> dict[str, float]:
    """Kill group 1 at ``kill_at`` committed steps, restart it once groups 0 and 2 have committed
    ``survive_for`` more, and end the job ``then`` steps after it rejoined."""
    job = Job(folder, time.monotonic() + budget, pace, api, extra=extra)
    try:
        for group in range(GROUPS):
            job.start(group)
        job.wait_until(f"group 1 committing {kill_at} steps",
                       lambda: committed(job.log(1)) >= kill_at)
        victim = job.processes[1]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed_at = time.time()
        at_kill = max(committed(job.log(g)) for g in (0, 2))
        job.wait_until(f"groups 0 and 2 committing {survive_for} steps without group 1",
                       lambda: min(committed(job.log(g)) for g in (0, 2))
                       >= at_kill + survive_for)
        lone = [e for g in (0, 2) for e in read(job.log(g))
                if e["event"] == "step" and e["t"] > killed_at and e["ok"]]
        assert lone and all(e["participants"] == 2 for e in lone[-4:]), \
            "the survivors' steps after the kill should have two groups in the quorum"
        first_lone = min(e["t"] for e in lone)
        restart_at = time.time()
        job.start(1)
        job.wait_until("group 1 rejoining", lambda: any(
            e["event"] == "step" and e["ok"] and e["t"] > restart_at
            for e in read(job.log(1))))
        steps = max(committed(job.log(g)) for g in range(GROUPS)) + then
        job.finish_at(steps)
        job.wait_until("every group finishing",
                       lambda: all(p.poll() is not None for p in job.processes.values()))
        for group, process in job.processes.items():
            assert process.returncode == 0, job.output(group)
    finally:
        job.stop()

    rejoined = [e for e in read(job.log(1)) if e["t"] > restart_at]
    steps_after = [e for e in rejoined if e["event"] == "step"]
    first_commit = next(e for e in steps_after if e["ok"])
    # recovered from a live peer: its first committed step continues the job's count, far past
    # what this fresh process could have committed by itself (no checkpoint exists to read)
    assert first_commit["committed"] > kill_at + survive_for, steps_after[:5]
    assert not list(folder.rglob("*.ckpt"))
    weights = [torch.load(job.out(g), weights_only=True) for g in range(GROUPS)]
    for group in (1, 2):
        assert weights[group].keys() == weights[0].keys()
        for key in weights[0]:
            assert torch.equal(weights[group][key], weights[0][key]), (group, key)
    ends = [read(job.log(g))[-1] for g in range(GROUPS)]
    assert all(e["event"] == "done" and e["committed"] == steps for e in ends), ends
    start_event = next(e for e in rejoined if e["event"] == "start")
    figures = {"survivors_paused_s": first_lone - killed_at,
               "rejoin_total_s": first_commit["t"] - restart_at,
               "rejoin_after_start_s": first_commit["t"] - start_event["t"],
               "steps_without_group_1": float(len(lone) // 2)}
    print("\ntorchft figures: " + ", ".join(f"{k}={v:.2f}" for k, v in figures.items()))
    return figures


@pytest.mark.timeout(150)
def test_a_killed_replica_group_rejoins_from_a_live_peer(tmp_path: Path) -> None:
    run_with_a_kill(tmp_path, kill_at=8, survive_for=10, then=10, pace=0.0, budget=130)


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("api", ["lite", "trainer"])
def test_a_killed_replica_group_rejoins_many_steps(tmp_path: Path, api: str) -> None:
    """A longer run: the victim is killed later and the survivors train longer alone; with the
    Trainer too (``StopAtCommittedSteps`` ends every group after the same committed step)."""
    run_with_a_kill(tmp_path, kill_at=60, survive_for=100, then=100, pace=0.02, budget=380,
                    api=api)


@pytest.mark.slow  # 20 s; make test runs the group-of-two path in the conformance kit (one group)
@pytest.mark.timeout(150)
def test_groups_of_two_processes_average_within_then_across_groups(tmp_path: Path) -> None:
    """Two groups of two processes each (fulmen's launcher starts the second): gradients are
    averaged over each group's process group, then across the groups; all four processes end on
    the same weights after the same committed steps."""
    job = Job(tmp_path, time.monotonic() + 130, pace=0.0, api="lite", groups=2, devices=2)
    job.finish_at(12)
    try:
        for group in range(2):
            job.start(group)
        job.wait_until("both groups finishing",
                       lambda: all(p.poll() is not None for p in job.processes.values()))
        for group, process in job.processes.items():
            assert process.returncode == 0, job.output(group)
    finally:
        job.stop()
    outs = [Path(f"{job.out(g)}.rank{r}") for g in range(2) for r in range(2)]
    weights = [torch.load(path, weights_only=True) for path in outs]
    for other in weights[1:]:
        for key in weights[0]:
            assert torch.equal(other[key], weights[0][key]), key
    logs = [read(Path(f"{job.log(g)}.rank{r}")) for g in range(2) for r in range(2)]
    for lines in logs:
        steps = [e for e in lines if e["event"] == "step"]
        assert steps[-1]["committed"] == 12 and all(e["participants"] == 2 for e in steps[2:])


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_torchfts_default_heartbeat_timeout(tmp_path: Path) -> None:
    """With torchft's defaults (heartbeat timeout 5 s, join timeout 60 s) the survivors wait
    about the heartbeat timeout: the lighthouse waits for the lost group until its heartbeats
    are that old (or the join timeout, whichever comes first)."""
    figures = run_with_a_kill(tmp_path, kill_at=8, survive_for=10, then=10, pace=0.02,
                              budget=130,
                              extra=("--heartbeat-timeout", "5", "--join-timeout", "60"))
    assert 4 <= figures["survivors_paused_s"] < 30


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_losing_the_lighthouse_stops_every_group_with_an_error_that_says_so(
        tmp_path: Path) -> None:
    """The lighthouse started for the user lives in group 0's process: killing group 0 leaves
    the others without quorums; they stop at quorum_timeout with an error naming the cause."""
    job = Job(tmp_path, time.monotonic() + 130, pace=0.02, api="lite",
              extra=("--quorum-timeout", "5"))
    try:
        for group in range(GROUPS):
            job.start(group)
        job.wait_until("group 0 committing 5 steps", lambda: committed(job.log(0)) >= 5)
        job.processes[0].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        for group in (1, 2):
            assert job.processes[group].wait(timeout=60) == 1
        waited = time.monotonic() - killed
    finally:
        job.stop()
    for group in (1, 2):
        output = (tmp_path / f"group{group}.out").read_text()
        assert "no quorum within quorum_timeout=5 s" in output, output[-3000:]
        assert "single point of failure" in output
    print(f"\nthe other groups stopped {waited:.1f} s after the lighthouse was lost")
