"""Puts the libraries' own test files where the slices run them, from what PyPI publishes.

    python tests/ecosystem/fetch_tests.py DEST [LIB ...]

For each library (all of libraries.py's by default) whose PyPI sdist ships its tests
(``Library.pypi == "sdist"``), ``pip download --no-binary :all: --no-deps NAME==VERSION`` and
extract the sdist's ``tests/`` and ``pyproject.toml`` (its pytest settings) to ``DEST/NAME``,
unmodified. Nothing of theirs is committed to this repository. A library whose tests PyPI does
not ship is listed with the repository to check out there instead (its slice runs only for a
developer who does; CI cannot). Idempotent: a ``DEST/NAME`` that holds this version is kept.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from libraries import LIBRARIES, Library

STAMP = "FROM_PYPI.txt"  #: written in DEST/NAME: what was extracted, from which sdist


def fetch(lib: Library, dest: Path) -> Path:
    """Extract ``lib``'s tests from its PyPI sdist into ``dest/lib.name``; return that folder."""
    target = dest / lib.name
    stamp = target / STAMP
    if stamp.exists() and stamp.read_text().startswith(f"{lib.name}=={lib.version} "):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                        "--disable-pip-version-check", "--no-binary", ":all:", "--no-deps",
                        "-d", tmp, f"{lib.name}=={lib.version}"], check=True)
        (sdist,) = Path(tmp).glob("*.tar.gz")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(sdist) as tar:
            top = tar.getmembers()[0].name.split("/")[0]
            wanted = [m for m in tar.getmembers()
                      if m.isfile() and (m.name.startswith(f"{top}/tests/")
                                         or m.name == f"{top}/pyproject.toml")]
            if not any(m.name.startswith(f"{top}/tests/") for m in wanted):
                raise SystemExit(f"{sdist.name} holds no tests/ (libraries.py says it does)")
            for member in wanted:
                member.name = member.name[len(top) + 1:]
                tar.extract(member, target, filter="data")
        stamp.write_text(f"{lib.name}=={lib.version} tests/ and pyproject.toml of {sdist.name} "
                         "(PyPI), unmodified\n")
    return target


def main(dest: str, names: list[str]) -> None:
    chosen = [lib for lib in LIBRARIES if not names or lib.name in names]
    unknown = set(names) - {lib.name for lib in LIBRARIES}
    if unknown:
        raise SystemExit(f"unknown libraries {sorted(unknown)}; known: "
                         f"{[lib.name for lib in LIBRARIES]}")
    for lib in chosen:
        if lib.on_pypi:
            where = fetch(lib, Path(dest))
            print(f"{lib.name} {lib.version}: tests from its PyPI sdist in {where}")
        else:
            print(f"{lib.name} {lib.version}: not fetched, {lib.pypi}; to run its slice, check "
                  f"out {lib.repository} into {Path(dest) / lib.name}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:])
