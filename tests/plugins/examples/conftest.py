"""Multi-process helpers for the example package's tests: every run has a timeout and its own
output folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from processes import script_runner

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def run_script(tmp_path: Path) -> Any:
    return script_runner(tmp_path, SCRIPTS, 120)
