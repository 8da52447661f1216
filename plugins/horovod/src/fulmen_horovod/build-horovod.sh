#!/usr/bin/env bash
# Builds Horovod (PyTorch + Gloo; no MPI, TensorFlow or MXNet) from its PyPI sdist against the
# environment's torch, caches the wheel and installs it into that environment. Shipped inside the
# fulmen-horovod wheel; run it as `fulmen-build-horovod` (or `make install-horovod` in a checkout).
#
# Horovod 0.28.1 (its last release) pins C++14 in two CMakeLists files while torch >= 2.1 headers
# need C++17; this script patches both. The build takes about 15 minutes on 2 cores, so the wheel
# is kept in  ${XDG_CACHE_HOME:-$HOME/.cache}/fulmen/horovod-<version>-torch-<torch version>/  and
# later runs only install it. torch is never replaced: every pip call is constrained to the
# installed torch version.
#
# Environment: FULMEN_PYTHON (the environment's python; default: python3 on PATH),
# FULMEN_CACHE_DIR (cache root), HOROVOD_BUILD_JOBS (parallel compile jobs, default 2, capped at 2
# on shared machines: set it higher yourself on a machine of your own).
set -euo pipefail

HOROVOD_VERSION=0.28.1
PYTHON=${FULMEN_PYTHON:-python3}
pip() { "$PYTHON" -m pip --disable-pip-version-check "$@"; }

if ! TORCH_VERSION=$("$PYTHON" -c "import torch; print(torch.__version__)" 2>/dev/null); then
    echo "build-horovod.sh: torch is not importable with $PYTHON; install fulmen (or torch)" \
         "there first, or point FULMEN_PYTHON at the environment's python." >&2
    exit 1
fi
# Every pip call keeps the installed torch (a looser requirement could pull another build).
CONSTRAINTS=$(mktemp "${TMPDIR:-/tmp}/fulmen-horovod-constraints.XXXXXX")
echo "torch==$TORCH_VERSION" >"$CONSTRAINTS"
trap 'rm -f "$CONSTRAINTS"' EXIT
CACHE_ROOT=${FULMEN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fulmen}
CACHE=$CACHE_ROOT/horovod-$HOROVOD_VERSION-torch-$TORCH_VERSION
JOBS=${HOROVOD_BUILD_JOBS:-2}

# The version of a Horovod whose torch extension loads (horovod.torch only warns when its
# extension is missing, so the extension module is imported directly).
installed_version() {
    "$PYTHON" -c "import horovod, horovod.torch.mpi_lib_v2; print('VERSION', horovod.__version__)" \
        2>/dev/null | sed -n 's/^VERSION //p' || true
}

if [ "$(installed_version)" = "$HOROVOD_VERSION" ]; then
    echo "build-horovod.sh: horovod $HOROVOD_VERSION already importable (torch $TORCH_VERSION)."
    exit 0
fi

mkdir -p "$CACHE"
# One build at a time per cache directory (two `make install-horovod` at once wait for each other).
exec 9>"$CACHE/.lock"
flock 9

wheel() { ls "$CACHE"/horovod-"$HOROVOD_VERSION"-*.whl 2>/dev/null | head -n 1; }

if [ -z "$(wheel)" ]; then
    echo "build-horovod.sh: building horovod $HOROVOD_VERSION against torch $TORCH_VERSION" \
         "with $JOBS jobs (about 15 minutes on 2 cores); wheel goes to $CACHE"
    # Build tools: cmake from the system when recent enough, else from PyPI into the venv.
    if ! cmake --version 2>/dev/null | grep -qE 'version (3\.(1[3-9]|[2-9][0-9])|[4-9])'; then
        pip install -q -c "$CONSTRAINTS" "cmake>=3.13"
        export PATH="$(dirname "$PYTHON"):$PATH"
    fi
    pip install -q -c "$CONSTRAINTS" setuptools wheel packaging
    # Build outside the cache folder: Horovod's CMake uses the source path as a regular
    # expression, and the '+' of a torch version like 2.13.0+cpu would misplace the extension.
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/fulmen-horovod-build.XXXXXX")
    case "$WORK" in *[!A-Za-z0-9_./-]*)
        echo "build-horovod.sh: build path $WORK has characters Horovod's CMake cannot take;" \
             "set TMPDIR to a plain path" >&2; exit 1;;
    esac
    trap 'rm -rf "$WORK" "$CONSTRAINTS"' EXIT
    pip download -q --no-deps --no-binary :all: -d "$WORK" "horovod==$HOROVOD_VERSION"
    tar -xzf "$WORK/horovod-$HOROVOD_VERSION.tar.gz" -C "$WORK"
    SRC=$WORK/horovod-$HOROVOD_VERSION
    # C++17 for torch's headers (top level, and the torch extension which resets it to 14).
    sed -i 's/set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD 17)/' \
        "$SRC/CMakeLists.txt" "$SRC/horovod/torch/CMakeLists.txt"
    grep -q 'set(CMAKE_CXX_STANDARD 17)' "$SRC/horovod/torch/CMakeLists.txt"
    ! grep -q 'set(CMAKE_CXX_STANDARD 14)' "$SRC/CMakeLists.txt" "$SRC/horovod/torch/CMakeLists.txt"
    # MAKEFLAGS set: Horovod's setup.py then drops its own -j8.
    env MAKEFLAGS="-j$JOBS" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
        HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
        HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
        "$PYTHON" -m pip --disable-pip-version-check wheel --no-build-isolation --no-deps \
        -w "$WORK/dist" "$SRC"
    BUILT=$(ls "$WORK"/dist/horovod-"$HOROVOD_VERSION"-*.whl)
    if ! "$PYTHON" -m zipfile -l "$BUILT" | grep -qE '^horovod/torch/mpi_lib_v2[^/ ]*\.so '; then
        echo "build-horovod.sh: $BUILT has no horovod/torch/mpi_lib_v2*.so; not caching it" >&2
        exit 1
    fi
    # Move into the cache only once complete: an interrupted build leaves no half wheel behind.
    mv "$BUILT" "$CACHE/"
else
    echo "build-horovod.sh: reusing $(wheel)"
fi

pip install -q -c "$CONSTRAINTS" --force-reinstall --no-deps "$(wheel)"
pip install -q -c "$CONSTRAINTS" "$(wheel)"  # its small pure-Python dependencies
if [ "$(installed_version)" != "$HOROVOD_VERSION" ]; then
    echo "build-horovod.sh: horovod.torch does not load after installing $(wheel):" >&2
    "$PYTHON" -c "import horovod.torch.mpi_lib_v2" >&2 || true
    exit 1
fi
echo "build-horovod.sh: installed horovod $HOROVOD_VERSION for torch $TORCH_VERSION"
