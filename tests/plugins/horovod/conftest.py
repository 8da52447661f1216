"""Fixtures for the Horovod tests: real ``horovodrun --gloo`` runs with timeouts.

Tests that use ``run_horovod`` are skipped, with the reason and the command that enables them,
where Horovod with PyTorch support cannot be imported (it is built by ``make install-horovod``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from processes import Run, clean_environment, next_out

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


def _environment() -> dict[str, str]:
    return clean_environment([SCRIPTS], drop_prefixes=("HOROVOD_", "OMPI_", "PMI_"))


@pytest.fixture
def run_horovod(tmp_path: Path) -> Any:
    """``run_horovod(script, *args, np=2)``: the script under ``horovodrun --gloo``;
    ``np=None`` runs it as plain ``python`` (fulmen's own launchers for ddp)."""
    if _PROBLEM is not None:
        pytest.skip(SKIP_REASON)

    def run(script: str, *args: str, np: int | None = 2, timeout: float = 240) -> Run:
        out = next_out(tmp_path)
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
