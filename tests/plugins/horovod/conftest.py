"""Fixtures for the Horovod tests: real ``horovodrun --gloo`` runs with timeouts.

Tests that use ``run_horovod`` are skipped, with the reason and the command that enables them,
where Horovod with PyTorch support cannot be imported (it is built by ``make install-horovod``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def horovod_problem() -> str | None:
    """Why Horovod cannot be used here, or None."""
    try:
        import horovod.torch.mpi_lib_v2  # noqa: F401  (horovod.torch only warns without it)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


_PROBLEM = horovod_problem()
SKIP_REASON = (f"Horovod is not importable ({_PROBLEM}); run `make install-horovod` to build it "
               "(about 15 minutes once) and enable these tests")


class Run:
    def __init__(self, done: subprocess.CompletedProcess[str], out: Path) -> None:
        self.returncode, self.stdout, self.stderr = done.returncode, done.stdout, done.stderr
        self.out = out

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self, name: str) -> Any:
        return json.loads((self.out / f"{name}.json").read_text())


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HOROVOD_", "OMPI_", "PMI_")) and k not in
           ("LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = str(SCRIPTS)
    return env


@pytest.fixture
def run_horovod(tmp_path: Path) -> Any:
    """``run_horovod(script, *args, np=2)``: the script under ``horovodrun --gloo``;
    ``np=None`` runs it as plain ``python`` (fulmen's own launchers for ddp)."""
    if _PROBLEM is not None:
        pytest.skip(SKIP_REASON)

    def run(script: str, *args: str, np: int | None = 2, timeout: float = 240) -> Run:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        out.mkdir()
        command = [sys.executable, str(SCRIPTS / script), *args, "--out", str(out)]
        if np is not None:
            horovodrun = shutil.which("horovodrun", path=str(Path(sys.executable).parent))
            assert horovodrun, "horovodrun is not installed beside this Python"
            command = [horovodrun, "--gloo", "-np", str(np), "-H", f"localhost:{np}",
                       "--start-timeout", "60", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=_environment(), cwd=tmp_path, start_new_session=True)
        return Run(done, out)

    return run
