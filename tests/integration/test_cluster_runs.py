"""Scheduler behaviour for real: SLURM requeue on SIGUSR1 (a fake ``scontrol`` on PATH records
the call), SIGTERM leaves a loadable checkpoint, elastic restarts resume, and two "nodes" on
loopback with a user ClusterEnvironment or fulmen's own launcher with NODE_RANK."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from processes import clean_environment

from conftest import SCRIPTS
from fulmen.fault_tolerance.preemption import VOTE_SECONDS

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
SCRIPT = str(SCRIPTS / "cluster_train.py")
CLEAN = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
         "FULMEN_LAUNCHED", "GROUP_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_env(**extra: str) -> dict[str, str]:
    return {**clean_environment([SCRIPTS], drop=CLEAN, drop_prefixes=("SLURM_",)), **extra}


def start(out: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, SCRIPT, "--out", str(out), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=out,
                            start_new_session=True)


def finish(procs: list[subprocess.Popen[str]], timeout: float = 180) -> list[tuple[int, str]]:
    results = []
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                os.killpg(p.pid, signal.SIGKILL)
            raise
        results.append((proc.returncode, err))
    return results


def rank_json(out: Path, rank: int) -> dict:
    return json.loads((out / f"rank{rank}.json").read_text())


def slurm(out: Path, ntasks: int, port: int, bin_dir: Path, args: list[str],
          **extra: str) -> list[subprocess.Popen[str]]:
    """What ``srun --ntasks=N`` would start: one process per task with SLURM's variables."""
    procs = []
    for rank in range(ntasks):
        env = base_env(SLURM_NTASKS=str(ntasks), SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank),
                       SLURM_NODEID="0", SLURM_NNODES="1", SLURM_NTASKS_PER_NODE=str(ntasks),
                       SLURM_JOB_NODELIST="localhost", SLURM_JOB_ID="4242",
                       SLURM_JOB_NAME="train", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **extra)
        procs.append(start(out, ["--devices", str(ntasks), *args], env))
    return procs


@pytest.fixture
def fake_scontrol(tmp_path: Path) -> Path:
    """A directory with an executable ``scontrol`` that appends its arguments to a log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "scontrol"
    script.write_text(f'#!/bin/sh\necho "$@" >> {bin_dir / "calls.log"}\n')
    script.chmod(0o755)
    return bin_dir


def close(a: dict, b: dict) -> bool:
    return all(torch.allclose(torch.tensor(x), torch.tensor(y), atol=1e-6)
               for x, y in zip(a["weights"], b["weights"]))


def test_slurm_requeue_on_sigusr1_then_resume(tmp_path, fake_scontrol):
    straight, job = tmp_path / "straight", tmp_path / "job"
    straight.mkdir(), job.mkdir()
    results = finish(slurm(straight, 2, free_port(), fake_scontrol, []))
    assert all(code == 0 for code, _ in results), results
    # No per-step collective: the ranks vote on signals about every VOTE_SECONDS of training
    # (twice at the start, while rank 0 measures the pace), not at each of the 12 steps.
    assert rank_json(straight, 0)["votes"] == rank_json(straight, 1)["votes"] <= 4

    # Only rank 1 gets the signal, at step 5: both ranks must still stop after the same batch.
    # The ranks agree in the background (no step waits on the vote); with steps slower than the
    # vote interval they vote after every batch and act one step later: after step 6.
    results = finish(slurm(job, 2, free_port(), fake_scontrol,
                           ["--at-step", "5", "--at-rank", "1", "--signal", "SIGUSR1",
                            "--step-seconds", str(VOTE_SECONDS + 0.1)]))
    assert [code for code, _ in results] == [0, 0], results
    assert "SIGUSR1 received; saved" in results[0][1] and "requeued the job" in results[0][1]
    assert (fake_scontrol / "calls.log").read_text() == "requeue 4242\n"  # once, by rank 0
    assert not (job / "rank0.json").exists()  # the run stopped before its end
    checkpoint = torch.load(job / "hpc_ckpt_1.ckpt", weights_only=True)
    assert checkpoint["global_step"] == 6
    assert checkpoint["loops"]["fit"]["epoch_done"] is False  # mid-epoch: resumed exactly

    # SLURM starts the requeued job with SLURM_RESTART_COUNT=1: fit resumes by itself.
    results = finish(slurm(job, 2, free_port(), fake_scontrol, [], SLURM_RESTART_COUNT="1"))
    assert all(code == 0 for code, _ in results), results
    resumed, reference = rank_json(job, 0), rank_json(straight, 0)
    assert resumed["start_step"] == 6 and resumed["global_step"] == reference["global_step"] == 12
    assert close(resumed, reference) and close(rank_json(job, 1), reference)


def test_sigterm_leaves_a_loadable_checkpoint_and_exits_cleanly(tmp_path, fake_scontrol):
    procs = slurm(tmp_path, 1, free_port(), fake_scontrol,
                  ["--at-step", "3", "--mode", "wait"])
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready0").exists():
        assert procs[0].poll() is None, procs[0].communicate()
        assert time.monotonic() < deadline, "the run never reached step 3"
        time.sleep(0.1)
    os.kill(procs[0].pid, signal.SIGTERM)
    (tmp_path / "go").touch()
    [(code, err)] = finish(procs)
    assert code == 128 + signal.SIGTERM, err
    assert "SIGTERM received; saved" in err and "Traceback" not in err
    assert not (fake_scontrol / "calls.log").exists()  # SIGTERM stops; it does not requeue
    checkpoint = torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=True)
    assert checkpoint["global_step"] == 3 and checkpoint["optimizer_states"]


def test_torchelastic_restart_resumes_from_the_newest_checkpoint(tmp_path):
    straight, job = tmp_path / "straight", tmp_path / "job"
    straight.mkdir(), job.mkdir()

    def torchrun(out: Path, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
             f"--master_port={free_port()}", "--max-restarts=1", SCRIPT, "--out", str(out),
             "--every-n-steps", "2", *args], env=base_env(), cwd=out, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

    assert finish([torchrun(straight)])[0][0] == 0
    # Rank 1 fails at step 5 on the first start; torchrun restarts both workers, which resume
    # from the step-4 checkpoint.
    [(code, err)] = finish([torchrun(job, "--at-step", "5", "--at-rank", "1", "--mode",
                                     "crash")])
    assert code == 0, err
    assert "rank 1 fails at step 5" in err
    resumed = rank_json(job, 0)
    assert resumed["start_step"] == 4 and resumed["global_step"] == 12
    assert close(resumed, rank_json(straight, 0))


@pytest.mark.parametrize("how", ["custom-env", "node-rank"])
def test_two_nodes_on_loopback(tmp_path, how):
    """Each "node" process launches its second local process: 4 ranks meet at one rendezvous."""
    port = free_port()
    nodes = []
    for node in (0, 1):
        if how == "custom-env":
            env = base_env(CLUSTER_NODE_RANK=str(node), CLUSTER_MAIN_ADDR="127.0.0.1",
                           CLUSTER_MAIN_PORT=str(port))
            args = ["--custom-env"]
        else:
            env = base_env(NODE_RANK=str(node), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            args = []
        nodes.append(start(tmp_path, [*args, "--num-nodes", "2", "--epochs", "1"], env))
    results = finish(nodes)
    assert all(code == 0 for code, _ in results), results
    ranks = [rank_json(tmp_path, r) for r in range(4)]
    assert [(r["node_rank"], r["local_rank"]) for r in ranks] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(r["world_size"] == 4 and r["weights"] == ranks[0]["weights"] for r in ranks)
    assert sorted(i for r in ranks for i in r["seen"]) == list(range(32))
    expected = "two_node_cluster" if how == "custom-env" else "local"
    assert {r["environment"] for r in ranks} == {expected}


def test_hybrid_sharding_on_two_nodes_trains_like_one_process(tmp_path):
    """HSDP (fsdp, sharding_strategy="HYBRID_SHARD") on 2 "nodes" x 2 processes: a (2, 2) mesh,
    parameters sharded within a node and replicated across nodes; every rank ends with the
    weights of one process that trains on the same global batches (4 ranks x 4 = 16)."""
    reference = tmp_path / "reference"
    reference.mkdir()
    one = start(reference, ["--devices", "1", "--epochs", "2", "--batch-size", "16"], base_env())
    port = free_port()
    nodes = [start(tmp_path, ["--num-nodes", "2", "--epochs", "2", "--sharding", "HYBRID_SHARD"],
                   base_env(NODE_RANK=str(node), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
             for node in (0, 1)]
    results = finish([one, *nodes])
    assert all(code == 0 for code, _ in results), results
    want = rank_json(reference, 0)
    ranks = [rank_json(tmp_path, r) for r in range(4)]
    assert all(r["mesh"] == [2, 2] for r in ranks)
    assert sorted(i for r in ranks for i in r["seen"]) == sorted(list(range(32)) * 2)
    for got in ranks:
        assert close(got, want)
