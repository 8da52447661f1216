"""Helpers for multi-process tests: every run has a timeout, and leaves no process behind."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import script_runner

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def run_script(tmp_path: Path) -> Any:
    return script_runner(tmp_path, SCRIPTS, 120)


def no_process_left(marker: str) -> bool:
    """True when no process whose command line contains ``marker`` is alive."""
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return not any(marker in line for line in out.splitlines() if "ps -eo" not in line)
