"""Helpers for multi-process tests: every run has a timeout, and leaves no process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    import time

    def run(script: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None,
            module: bool = False) -> Run:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        out.mkdir()
        target = ["-m", script] if module else [str(SCRIPTS / script)]
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK",
                                    "MASTER_ADDR", "MASTER_PORT")}
        environment.update(env or {})
        environment["PYTHONPATH"] = os.pathsep.join([str(SCRIPTS), str(SCRIPTS.parent.parent /
                                                                       "fixtures")])
        start = time.monotonic()
        done = subprocess.run([sys.executable, *target, *args, "--out", str(out)],
                              capture_output=True, text=True, timeout=timeout, env=environment,
                              cwd=tmp_path, start_new_session=True)
        return Run(done, out, time.monotonic() - start)

    return run


def no_process_left(marker: str) -> bool:
    """True when no process whose command line contains ``marker`` is alive."""
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return not any(marker in line for line in out.splitlines() if "ps -eo" not in line)
