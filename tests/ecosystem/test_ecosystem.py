"""Real libraries built on Lightning, their own tests run unmodified under ``fulmen run``.

Issue 42: darts, neuralforecast, scvi-tools, chemprop, nequip and litgpt (Fabric) each have a
slice of their test suite (libraries.py: the version, where the tests come from, and the ids
that pass on real Lightning 2.6.6 in the same environment). Each slice runs here as
``fulmen run -m pytest <ids>`` in a subprocess, in the ecosystem environment that
tests/ecosystem/build_env.sh makes (a venv per library set, outside the repository; several GB,
see that script), and must pass as it does on Lightning. The test names every id that did not,
with the first error line of each.

Skipped, saying why, where that environment or a library's test files are absent: PyPI ships
only scvi-tools' (fetch_tests.py), so darts, neuralforecast, chemprop, nequip and litgpt run only
where a developer checked their repository out (libraries.py names each). All ``slow``: one
library takes minutes on two cores; ``make test-all`` builds the environment first. To see the
Lightning side, run ``bash tests/ecosystem/build_env.sh --compare LIB`` (runs the slice on both
and prints tests/ecosystem/compare.py's table of causes).

``make test`` runs :data:`libraries.QUICK` instead (test_quick_slice_passes_under_fulmen_run): a
few of scvi-tools' tests, in the project's own venv, which ``make install`` gives scvi-tools
(requirements-dev.txt) and the tests of its PyPI sdist (in ``$VENV/ecosystem-tests``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from libraries import LIBRARIES, QUICK, Library, eco_dir  # beside this file (rootdir import)

TIMEOUT = 3000  # seconds for one library's slice (the slowest takes about 10 minutes here)
QUICK_TIMEOUT = 600  # seconds for make test's slice (about a minute on two busy cores)
#: where ``make install`` puts the QUICK libraries' test files (fetch_tests.py), in this venv
QUICK_TESTS = Path(sys.prefix) / "ecosystem-tests"
BY_NAME = {lib.name: lib for lib in LIBRARIES}


def _missing(lib: Library) -> str | None:
    """Why ``lib``'s slice cannot run here, or None."""
    root = eco_dir()
    python = lib.python(root)
    if not python.exists():
        return (f"no ecosystem venv at {python.parent.parent} "
                "(build it: bash tests/ecosystem/build_env.sh; FULMEN_ECO_DIR moves it)")
    first = lib.cwd(root) / lib.args[0]
    if not first.exists():
        if lib.on_pypi:
            return f"no test files of {lib.name} at {first} (bash tests/ecosystem/build_env.sh)"
        return (f"no test files of {lib.name} at {first}: {lib.pypi}, so CI cannot run this "
                f"slice; check out {lib.repository} into {lib.cwd(root)} to run it")
    probe = subprocess.run([str(python), "-c", f"import {lib.module}"], capture_output=True,
                           timeout=600)
    if probe.returncode:
        return f"{lib.name} does not import in {python}: {probe.stderr.decode()[-300:]}"
    return None


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT + 60)  # the project's default (300 s) is one test's, not a slice's
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


@pytest.mark.timeout(QUICK_TIMEOUT + 60)
@pytest.mark.parametrize("name", sorted(QUICK))
def test_quick_slice_passes_under_fulmen_run(name: str, tmp_path: Path) -> None:
    """``make test``'s slice: QUICK[name]'s tests, unmodified, under ``fulmen run -m pytest`` in
    this interpreter; every one must pass (they pass on Lightning 2.6.6 too)."""
    lib, tests = BY_NAME[name], QUICK[name]
    if importlib.util.find_spec(lib.module) is None:
        pytest.skip(f"{lib.name} is not installed in {sys.prefix} (make install installs "
                    f"{lib.name}=={lib.version} from requirements-dev.txt)")
    suite = QUICK_TESTS / lib.name
    assert (suite / "tests").is_dir(), (
        f"no test files of {lib.name} at {suite}: make install puts them there "
        f"(python tests/ecosystem/fetch_tests.py {QUICK_TESTS} {lib.name})")
    report = tmp_path / "fulmen.xml"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "WANDB_MODE": "disabled"}
    done = subprocess.run(
        [sys.executable, "-m", "fulmen", "run", "-m", "pytest", "-p", "no:cacheprovider",
         "--timeout", "300", "-q", f"--junitxml={report}", *tests],
        cwd=suite, env=env, capture_output=True, text=True, timeout=QUICK_TIMEOUT)
    failed = lib.failures(report, done.stdout + done.stderr, tests)
    assert not failed, (
        f"{len(failed)} of {len(tests)} {lib.name} {lib.version} tests fail under fulmen run "
        f"(exit {done.returncode}):\n" + "\n".join(f"  {k}: {why}" for k, why in failed.items())
        + "\n" + (done.stdout + done.stderr)[-3000:])
