"""Real libraries built on Lightning, their own tests run unmodified under ``fulmen run``.

Issue 42: darts, neuralforecast, scvi-tools, chemprop, nequip and litgpt (Fabric) each have a
slice of their test suite (libraries.py: the version, where the tests come from, and the ids
that pass on real Lightning 2.6.6 in the same environment). Each slice runs here as
``fulmen run -m pytest <ids>`` in a subprocess, in the ecosystem environment that
tests/ecosystem/build_env.sh makes (a venv per library set, outside the repository; several GB,
see that script), and must pass as it does on Lightning. The test names every id that did not,
with the first error line of each.

Skipped, saying why, where that environment or a library is absent (``make test`` machines
without it). All ``slow``: one library takes minutes on two cores. To see the Lightning side,
run ``bash tests/ecosystem/build_env.sh --compare LIB`` (runs the slice on both and prints
tests/ecosystem/compare.py's table of causes).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from libraries import LIBRARIES, Library, eco_dir  # beside this file (pytest's rootdir import)

TIMEOUT = 3000  # seconds for one library's slice (the slowest takes about 10 minutes here)


def _missing(lib: Library) -> str | None:
    """Why ``lib``'s slice cannot run here, or None."""
    root = eco_dir()
    python = lib.python(root)
    if not python.exists():
        return (f"no ecosystem venv at {python.parent.parent} "
                "(build it: bash tests/ecosystem/build_env.sh; FULMEN_ECO_DIR moves it)")
    if not lib.cwd(root).exists():
        return f"no test suite of {lib.name} at {lib.cwd(root)} (bash tests/ecosystem/build_env.sh)"
    probe = subprocess.run([str(python), "-c", f"import {lib.module}"], capture_output=True,
                           timeout=600)
    if probe.returncode:
        return f"{lib.name} does not import in {python}: {probe.stderr.decode()[-300:]}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("lib", LIBRARIES, ids=[lib.name for lib in LIBRARIES])
def test_library_slice_passes_under_fulmen_run(lib: Library, tmp_path: Path) -> None:
    why = _missing(lib)
    if why:
        pytest.skip(why)
    root = eco_dir()
    report = tmp_path / "fulmen.xml"
    env = {**os.environ, **lib.env, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "disabled",
           "MPLBACKEND": "Agg",
           "PATH": f"{lib.python(root).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)  # the venv's own editable fulmen, not this checkout's path order
    done = subprocess.run(
        [str(lib.python(root)), "-m", "fulmen", "run", "-m", "pytest", "-p", "no:cacheprovider",
         "--timeout", "300", "--continue-on-collection-errors", "-q", f"--junitxml={report}",
         *lib.args],
        cwd=lib.cwd(root), env=env, capture_output=True, text=True, timeout=TIMEOUT)
    failed = lib.failures(report, done.stdout + done.stderr)
    if len(failed) == len(lib.tests) and set(failed.values()) == {"missing"}:
        failed = {"(whole run)": (done.stdout + done.stderr)[-2000:]}  # pytest ran nothing
    assert not failed, (
        f"{len(failed)} of {len(lib.tests)} {lib.name} {lib.version} tests that pass on Lightning "
        "fail under fulmen run:\n" + "\n".join(f"  {k}: {why}" for k, why in failed.items()))
