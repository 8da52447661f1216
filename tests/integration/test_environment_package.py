"""The example cluster-environment package of docs/clusters.md, pip-installed like a stranger's
plugin: fulmen lists it, detects its scheduler, and trains two processes under it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from processes import clean_environment

from conftest import SCRIPTS

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]
PACKAGE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fulmen-acme-cluster"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("acme")
    source, target = root / "fulmen-acme-cluster", root / "site"  # a copy: builds leave files
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, timeout=180, capture_output=True)
    return target


def acme_env(site: Path, rank: int, port: int) -> dict[str, str]:
    env = clean_environment([site, SCRIPTS])
    env.update(ACME_JOB_ID="77", ACME_WORLD_SIZE="2", ACME_RANK=str(rank),
               ACME_LOCAL_RANK=str(rank), ACME_NODE_RANK="0", ACME_HEAD_NODE="127.0.0.1",
               ACME_PORT=str(port))
    return env


def test_installed_package_is_listed_and_detects_its_jobs(site):
    env = acme_env(site, 0, 1234)
    listing = subprocess.run([sys.executable, "-m", "fulmen", "plugins"], env=env, text=True,
                             capture_output=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert "fulmen-acme-cluster" in listing.stdout and "acme" in listing.stdout
    detect = subprocess.run([sys.executable, "-m", "fulmen", "plugins", "--detect"], env=env,
                            text=True, capture_output=True, timeout=60)
    assert "'acme'  <- chosen (first answer)" in detect.stdout, detect.stdout + detect.stderr


def test_two_acme_tasks_train_together(site, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, str(SCRIPTS / "cluster_train.py"), "--out",
                               str(tmp_path), "--epochs", "1"], env=acme_env(site, rank, port),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path, start_new_session=True) for rank in (0, 1)]
    try:
        outputs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], outputs
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["environment"] for r in ranks] == ["acme", "acme"]
    assert ranks[0]["weights"] == ranks[1]["weights"] and ranks[0]["world_size"] == 2
