"""``rank_zero_only`` of ``lightning_utilities`` (which Lightning's ``rank_zero_only`` is, and
ecosystem libraries decorate with) follows the rank fulmen runs on: set from the environment
when fulmen's rank-zero utilities are imported (Lightning's ``lightning.fabric.utilities.
rank_zero`` at import; its ``tests_fabric/utilities/test_rank_zero.py`` cases, on
lightning_utilities' object), and to the global rank on each process of a real 2-process
``ddp``/``ddp_spawn`` fit over gloo when the strategy sets up (Lightning's
``DDPStrategy.setup_environment``: ``rank_zero_only.rank = utils_rank_zero_only.rank =
self.global_rank``). ``ddp_spawn``'s workers start with no rank variable, so only that set-up
gives rank 1 its rank.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from processes import script_runner

import fulmen.utilities.rank_zero

pytestmark = pytest.mark.timeout(240)

_RANK_VARIABLES = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


def test_one_rank_zero_only_for_fulmen_lightning_and_lightning_utilities():
    from lightning_utilities.core.rank_zero import rank_zero_only

    assert fulmen.utilities.rank_zero.rank_zero_only is rank_zero_only
    assert fulmen.utilities.rank_zero.current_rank() == rank_zero_only.rank


def _run(code: str, env: dict[str, str], *prefix: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in _RANK_VARIABLES}
    done = subprocess.run([sys.executable, *prefix, "-c", code] if not prefix else
                          [sys.executable, *prefix], capture_output=True, text=True, timeout=120,
                          env={**clean, **env}, check=True)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(("env_vars", "expected"), [
    ({"RANK": "0"}, "1"), ({"SLURM_PROCID": "0"}, "1"), ({"LOCAL_RANK": "0"}, "1"),
    ({"JSM_NAMESPACE_RANK": "0"}, "1"), ({}, "1"), ({"RANK": "1"}, "None"),
    ({"SLURM_PROCID": "2"}, "None"), ({"LOCAL_RANK": "3"}, "None"),
    ({"JSM_NAMESPACE_RANK": "4"}, "None")])
def test_rank_zero_known_environment_variables(env_vars, expected):
    """Importing fulmen's rank-zero utilities sets lightning_utilities' rank."""
    code = ("import fulmen.utilities.rank_zero\n"
            "from lightning_utilities.core.rank_zero import rank_zero_only\n"
            "@rank_zero_only\n"
            "def foo():\n"
            "    return 1\n"
            "print(foo())\n")
    assert _run(code, env_vars) == expected


def test_a_rank_set_before_is_kept():
    """As Lightning's import: a rank already set is not overwritten."""
    code = ("from lightning_utilities.core.rank_zero import rank_zero_only\n"
            "rank_zero_only.rank = 5\n"
            "import fulmen.utilities.rank_zero as rz\n"
            "print(rank_zero_only.rank, rz.current_rank())\n")
    assert _run(code, {"RANK": "1"}) == "5 5"


def test_lightning_names_under_fulmen_run(tmp_path):
    """Under ``fulmen run``, Lightning's ``rank_zero_only`` (both homes) is lightning_utilities'
    one, set from the environment."""
    script = tmp_path / "names.py"
    script.write_text(
        "from lightning.pytorch.utilities.rank_zero import rank_zero_only as pl_only\n"
        "from lightning.fabric.utilities.rank_zero import rank_zero_only as fabric_only\n"
        "from lightning_utilities.core.rank_zero import rank_zero_only\n"
        "assert pl_only is fabric_only is rank_zero_only\n"
        "print(rank_zero_only.rank)\n")
    assert _run("", {"LOCAL_RANK": "3"}, "-m", "fulmen", "run", str(script)) == "3"


@pytest.mark.parametrize("strategy", ["ddp", "ddp_spawn"])
def test_rank_zero_only_runs_on_rank_zero_in_a_ddp_fit(tmp_path: Path, strategy: str) -> None:
    run = script_runner(tmp_path, Path(__file__).parent / "scripts", 200)
    done = run("rank_zero_ddp.py", "--strategy", strategy, env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.output[-3000:]
    ranks = {r: done.json(f"rank{r}") for r in (0, 1)}
    assert sorted(p.name for p in done.out.glob("ran-on-rank*")) == ["ran-on-rank0"]
    assert ranks[0]["ranks_in_steps"] == [0, 0] and ranks[1]["ranks_in_steps"] == [1, 1]
    assert ranks[0]["shared"] and ranks[1]["shared"]
    if strategy == "ddp_spawn":  # no rank variable in the workers: the set-up set it
        assert ranks[1]["rank_at_import"] == 0
    else:  # the launcher gives each process its LOCAL_RANK: set on import already
        assert ranks[1]["rank_at_import"] == 1
