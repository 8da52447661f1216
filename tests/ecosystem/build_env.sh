#!/usr/bin/env bash
# Builds the ecosystem environment tests/ecosystem/test_ecosystem.py runs in (issue 42), outside
# the repository: $FULMEN_ECO_DIR (default ~/.cache/fulmen-ecosystem).
#   venv/         torch 2.13 CPU, this checkout's fulmen (editable), lightning 2.6.6, pytest, and
#                 darts 0.46.1, neuralforecast 3.3.0, scvi-tools 1.4.2, chemprop 2.3.1, nequip 0.19.0
#                 with the test-only packages their slices import
#   venv-litgpt/  the same without those five, with litgpt 0.5.13: litgpt pins
#                 jsonargparse<=4.41 and fulmen-core requires >=4.49, so pip cannot put both in one
#   suites/LIB/   the libraries' own test files, unmodified: fetch_tests.py extracts them from the
#                 PyPI sdist where it ships them (scvi-tools); for darts, neuralforecast, chemprop,
#                 nequip and litgpt PyPI ships none or an incomplete set, so their slices run only
#                 where a developer checks out the repository and tag libraries.py names into
#                 suites/LIB (the script prints how); test_ecosystem.py skips them otherwise
# About 4.2 GB on disk, 10-15 minutes on 2 cores from a warm pip cache (ray, pyarrow, scanpy,
# rdkit, transformers are the bulk). Idempotent: a venv that exists is only topped up.
#
#   bash tests/ecosystem/build_env.sh                # build
#   bash tests/ecosystem/build_env.sh --compare LIB  # run LIB's slice on Lightning and on fulmen
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ECO=${FULMEN_ECO_DIR:-$HOME/.cache/fulmen-ecosystem}
PY=${PYTHON:-python3.11}
C=(-c "$REPO/constraints.txt")  # torch==2.13.0: pip never swaps in a CUDA build
FULMEN=(-e "$REPO/core" -e "$REPO/accelerators" -e "$REPO/strategies" -e "$REPO/precision"
        -e "$REPO/environments" -e "$REPO/meta")
BASE=("lightning==2.6.6" "pytest>=8" "pytest-timeout>=2.3")

venv() {  # venv NAME PACKAGES...: torch, then fulmen + Lightning, then the libraries
  local dir=$ECO/$1; shift
  [ -x "$dir/bin/python" ] || "$PY" -m venv "$dir"
  local pip=("$dir/bin/python" -m pip install -q --disable-pip-version-check)
  # torch first, alone: with no torch present a library's looser requirement would pull CUDA
  "$dir/bin/python" -c "import torch" 2>/dev/null || nice -n 10 "${pip[@]}" "${C[@]}" torch==2.13.0
  nice -n 10 "${pip[@]}" "${C[@]}" "${FULMEN[@]}" "${BASE[@]}"
  # a second resolve: litgpt's jsonargparse<=4.41 replaces fulmen-core's >=4.49 there (pip
  # warns); in one resolve pip would fall back to an older litgpt instead
  nice -n 10 "${pip[@]}" "${C[@]}" "$@"
  "$dir/bin/python" -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
}

if [ "${1:-}" = "--compare" ]; then
  lib=$2; cd "$REPO"
  mapfile -t L < <(python3 - "$lib" <<'PY'
import sys; sys.path.insert(0, "tests/ecosystem")
from libraries import LIBRARIES, eco_dir
lib = next(l for l in LIBRARIES if l.name == sys.argv[1])
print(lib.python(eco_dir())); print(lib.cwd(eco_dir())); print("\n".join(lib.args))
PY
)
  python=${L[0]}; cwd=${L[1]}; args=("${L[@]:2}")
  out=$(mktemp -d)
  export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
    WANDB_MODE=disabled MPLBACKEND=Agg PATH="$(dirname "$python"):$PATH"
  unset PYTHONPATH
  common=(-p no:cacheprovider --timeout 300 --continue-on-collection-errors -q)
  (cd "$cwd" &&
   nice -n 10 "$python" -m pytest "${common[@]}" --junitxml="$out/lightning.xml" "${args[@]}" | tail -1
   nice -n 10 "$python" -m fulmen run -m pytest "${common[@]}" --junitxml="$out/fulmen.xml" \
     "${args[@]}" > "$out/fulmen.log" 2>&1; tail -1 "$out/fulmen.log") || true
  python3 "$REPO/tests/ecosystem/compare.py" "$out/lightning.xml" "$out/fulmen.xml"
  exit 0
fi

venv venv "darts==0.46.1" "neuralforecast==3.3.0" "scvi-tools==1.4.2" "chemprop==2.3.1" \
  "nequip==0.19.0" gitpython polars s3fs fugue
venv venv-litgpt "litgpt[test]==0.5.13" "transformers>=4.51.3,<4.57" "torchmetrics>=1.3.1" \
  "tensorboard>=2.14"
SUITES=${FULMEN_ECO_SUITES:-$ECO/suites}
"$ECO/venv/bin/python" "$REPO/tests/ecosystem/fetch_tests.py" "$SUITES"
# darts' tests import darts.tests.conftest: they live inside the installed package
site=$("$ECO/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if [ -d "$SUITES/darts/darts/tests" ]; then
  rm -rf "$site/darts/tests" && cp -r "$SUITES/darts/darts/tests" "$site/darts/tests"
fi
echo "ecosystem environment ready in $ECO ($(du -sh "$ECO" | cut -f1))"
