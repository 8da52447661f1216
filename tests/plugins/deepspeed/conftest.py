"""Multi-process helpers for the DeepSpeed tests: each run is a real script started in its own
session with a timeout; it writes JSON results to ``--out``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from processes import script_runner

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def run_script(tmp_path: Path) -> Any:
    return script_runner(tmp_path, SCRIPTS, 150, drop=("DS_ACCELERATOR", "LOCAL_SIZE"))
