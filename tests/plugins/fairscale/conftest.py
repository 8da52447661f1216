"""Multi-process helpers for the fairscale plugin tests (a copy of tests/integration's
``run_script``): every run has a timeout and its own output folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


class Run:
    def __init__(self, done: subprocess.CompletedProcess[str], out: Path, seconds: float):
        self.returncode, self.stdout, self.stderr = done.returncode, done.stdout, done.stderr
        self.out, self.seconds = out, seconds

    def json(self, name: str) -> Any:
        return json.loads((self.out / f"{name}.json").read_text())


@pytest.fixture
def run_script(tmp_path: Path) -> Any:
    def run(script: str, *args: str, timeout: float = 90, env: dict[str, str] | None = None
            ) -> Run:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        out.mkdir()
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK",
                                    "MASTER_ADDR", "MASTER_PORT")}
        environment.update(env or {})
        environment["PYTHONPATH"] = str(SCRIPTS)
        start = time.monotonic()
        done = subprocess.run([sys.executable, str(SCRIPTS / script), *args, "--out", str(out)],
                              capture_output=True, text=True, timeout=timeout, env=environment,
                              cwd=tmp_path, start_new_session=True)
        return Run(done, out, time.monotonic() - start)

    return run
