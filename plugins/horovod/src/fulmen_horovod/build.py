"""``fulmen-build-horovod``: build Horovod for this environment's torch (the script shipped here).

Horovod's last release cannot be pip-built against current torch, so ``fulmen-horovod`` does not
depend on it; this command runs ``build-horovod.sh`` (beside this module) with this interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("build-horovod.sh")


def main(argv: list[str] | None = None) -> int:
    """Run the build script for ``sys.executable``'s environment; its exit status is ours."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        print(f"fulmen-build-horovod takes no arguments (got {' '.join(args)}); settings are "
              "environment variables: HOROVOD_BUILD_JOBS, FULMEN_CACHE_DIR", file=sys.stderr)
        return 2
    bash = shutil.which("bash")
    if bash is None:
        print("fulmen-build-horovod needs bash, cmake and a C++17 compiler; bash is not on PATH",
              file=sys.stderr)
        return 1
    env = {**os.environ, "FULMEN_PYTHON": os.environ.get("FULMEN_PYTHON", sys.executable)}
    return subprocess.call([bash, str(SCRIPT)], env=env)


if __name__ == "__main__":
    raise SystemExit(main())
