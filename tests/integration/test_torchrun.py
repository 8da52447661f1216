"""torchrun creates the processes; fulmen recognises it and launches nothing — one node, and
two "nodes" on loopback reaching a real rendezvous."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from processes import clean_environment

from conftest import SCRIPTS

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def torchrun(out: Path, launcher_args: list[str], script_args: list[str]
             ) -> subprocess.Popen[str]:
    env = clean_environment([SCRIPTS])
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *launcher_args,
                             str(SCRIPTS / "train.py"), "--out", str(out), "--epochs", "1",
                             *script_args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=out)


def ranks(out: Path) -> list[dict]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


def test_torchrun_one_node(tmp_path):
    proc = torchrun(tmp_path, ["--nproc_per_node=2", f"--master_port={free_port()}"],
                    ["--devices", "2"])
    _, err = proc.communicate(timeout=200)
    assert proc.returncode == 0, err
    r0, r1 = ranks(tmp_path)
    assert (r0["environment"], r1["environment"]) == ("torchelastic", "torchelastic")
    assert r0["world_size"] == 2 and r0["weights"] == r1["weights"]


def test_torchrun_two_nodes_on_loopback(tmp_path):
    port = free_port()
    common = ["--nnodes=2", "--nproc_per_node=1", "--rdzv-backend=c10d",
              f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=fulmen-test"]
    nodes = [torchrun(tmp_path, [*common, f"--node_rank={i}"],
                      ["--devices", "1", "--num-nodes", "2"]) for i in (0, 1)]
    outputs = [node.communicate(timeout=200) for node in nodes]
    assert all(node.returncode == 0 for node in nodes), outputs
    r0, r1 = ranks(tmp_path)
    assert r0["world_size"] == 2 and r0["weights"] == r1["weights"]
    assert sorted(r0["seen"][:16] + r1["seen"][:16]) == list(range(32))


def test_torchrun_with_devices_that_disagree(tmp_path):
    proc = torchrun(tmp_path, ["--nproc_per_node=2", f"--master_port={free_port()}"],
                    ["--devices", "3"])
    _, err = proc.communicate(timeout=200)
    assert proc.returncode != 0
    assert "torchrun started 2 processes per node" in err and "devices=3" in err
