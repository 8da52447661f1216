"""Lightning's ``tests_fabric/utilities/test_rank_zero.py``, ported to fulmen.

Lightning reloads its module inside the test process with a patched environment; here each case
runs in a fresh interpreter with that environment, which is what a launched process sees.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fulmen.utilities.rank_zero import get_rank

_RANK_VARIABLES = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _RANK_VARIABLES}
    env.update(extra)
    return env


@pytest.mark.parametrize(
    ("env_vars", "expected"),
    [
        ({"RANK": "0"}, "1"),
        ({"SLURM_PROCID": "0"}, "1"),
        ({"LOCAL_RANK": "0"}, "1"),
        ({"JSM_NAMESPACE_RANK": "0"}, "1"),
        ({}, "1"),
        ({"RANK": "1"}, "None"),
        ({"SLURM_PROCID": "2"}, "None"),
        ({"LOCAL_RANK": "3"}, "None"),
        ({"JSM_NAMESPACE_RANK": "4"}, "None"),
    ],
)
def test_rank_zero_known_environment_variables(env_vars, expected):
    """Test that rank environment variables are properly checked for rank_zero_only."""
    code = ("from fulmen.utilities import rank_zero_only\n"
            "@rank_zero_only\n"
            "def foo():\n"
            "    return 1\n"
            "print(foo())\n")
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(**env_vars), capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == expected


@pytest.mark.parametrize(
    ("environ", "expected_rank"),
    [
        ({"JSM_NAMESPACE_RANK": "3"}, 3),
        ({"JSM_NAMESPACE_RANK": "3", "SLURM_PROCID": "2"}, 2),
        ({"JSM_NAMESPACE_RANK": "3", "SLURM_PROCID": "2", "LOCAL_RANK": "1"}, 1),
        ({"JSM_NAMESPACE_RANK": "3", "SLURM_PROCID": "2", "LOCAL_RANK": "1", "RANK": "0"}, 0),
    ],
)
def test_rank_zero_priority(environ, expected_rank, monkeypatch):
    """Test the priority in which the rank gets determined when multiple environment variables are available."""
    for key in _RANK_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert get_rank() == expected_rank


def test_rank_zero_warn_and_info_only_on_rank_zero():
    """Messages come from rank zero only; importing fulmen.utilities imports no torch."""
    code = ("import sys, warnings\n"
            "from fulmen.utilities import rank_zero_warn, rank_zero_info\n"
            "warnings.simplefilter('always')\n"
            "rank_zero_warn('from-warn')\n"
            "rank_zero_info('from-info')\n"
            "print('torch' in sys.modules)\n")
    for rank, shown in (("0", True), ("1", False)):
        out = subprocess.run([sys.executable, "-c", code], env=_clean_env(RANK=rank), capture_output=True,
                             text=True, timeout=120, check=True)
        assert out.stdout.strip() == "False"
        assert ("from-warn" in out.stderr) is shown and ("from-info" in out.stderr) is shown
