"""Launched processes share the node's cores: one warning when there are more processes than
cores, and a thread cap unless the user set OMP_NUM_THREADS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from processes import script_runner

from fulmen_strategies.launchers.threads import usable_cores

SCRIPTS = Path(__file__).parent / "scripts"
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def run_script(tmp_path: Path) -> Any:
    return script_runner(tmp_path, SCRIPTS, 200, drop=("OMP_NUM_THREADS",))


@pytest.mark.parametrize("strategy", ["ddp", "ddp_spawn"])
def test_each_process_gets_its_share_of_the_cores(run_script, strategy):
    run = run_script("threads.py", "--strategy", strategy, "--devices", "2")
    assert run.returncode == 0, run.stderr
    assert run.json("threads") == [max(1, usable_cores() // 2)] * 2
    assert "usable CPU cores" not in run.stderr or usable_cores() < 2


@pytest.mark.skipif(usable_cores() not in (2, 3), reason="needs 2 or 3 usable cores (the cap, 1, "
                    "must differ from the user's value, 2, which torch may not exceed)")
def test_the_users_omp_num_threads_wins(run_script):
    run = run_script("threads.py", "--strategy", "ddp_spawn", "--devices", "2",
                     env={"OMP_NUM_THREADS": "2"})
    assert run.returncode == 0, run.stderr
    assert run.json("threads") == [2, 2]


@pytest.mark.skipif(usable_cores() >= 4, reason="needs fewer than 4 usable cores")
def test_more_processes_than_cores_warns_once(run_script):
    run = run_script("threads.py", "--strategy", "ddp", "--devices", "4")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("starts 4 processes on this node, which has") == 1
    assert run.json("threads") == [1, 1, 1, 1]
