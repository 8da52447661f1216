#!/usr/bin/env bash
# The GPU check, in one call on a lent GPU machine (no network; Python 3.12, torch 2.11+CUDA,
# pytorch-lightning 2.6.6 in its image):
#
#   tools/device-check.sh --prepare   here, once: fetch the wheels the image lacks into .whl/
#                                      (ignored by git; the device call carries it)
#   tools/device-check.sh --dry-run   here: checks the plan on the CPU — the wheels are there,
#                                      the CUDA tier runs with FULMEN_GPU_TIER_DEVICE=cpu, the
#                                      benchmark runs a tiny model for a few steps
#   tools/device-check.sh             there: installs fulmen from the tree (editable) and the
#                                      wheels into the image's Python, runs `make test-gpu PY=python3`, then tests/benchmarks/gpu_throughput.py;
#                                      writes gpu-tests.xml, gpu-tests.log, gpu-bench.json and
#                                      summary.txt under $OUT (or ./device-out)
#
# Budget: at most about 8 minutes of command time: the tests get TEST_TIMEOUT seconds (default
# 180); the benchmark starts no new run after BENCH_BUDGET (default 260) and is stopped at
# BENCH_TIMEOUT (default 360); its JSON is rewritten after every run, so a cut leaves the rest.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-run}
WHEELS=.whl
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"

# What the device image lacks (KINDS.md lists its packages): fulmen-core's jsonargparse with the
# `signatures` extra and crc32c, hatchling and editables (editable installs without the network),
# and DeepSpeed with its two missing dependencies. The project is installed with --no-deps: a
# dependency missing from this list fails at import, so keep it in step with core/pyproject.toml.
PURE=(jsonargparse docstring-parser typeshed-client typing-extensions hatchling trove-classifiers
      tomlkit editables hjson pydantic annotated-types typing-inspection)
BINARY=(pydantic-core crc32c)

prepare() {
    mkdir -p "$WHEELS"
    local pip=(.venv/bin/python -m pip --disable-pip-version-check)
    [ -x .venv/bin/python ] || pip=(python3 -m pip --disable-pip-version-check)
    local platform=(--only-binary=:all: --python-version 3.12 --implementation cp
                    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
                    --platform manylinux2014_x86_64 --platform any)
    "${pip[@]}" download -q --no-deps "${platform[@]}" -d "$WHEELS" "${PURE[@]}" "${BINARY[@]}"
    # pydantic pins its core exactly: keep the pair pip chose together
    # DeepSpeed publishes no wheel: build one (pure Python; its ops are built on first use)
    "${pip[@]}" wheel -q --no-deps --no-build-isolation -c constraints.txt -w "$WHEELS" \
        deepspeed==0.19.8
    ls "$WHEELS"; du -sh "$WHEELS"
}

install() {
    # Into the image's own Python (the machine is discarded after the call): the wheels the
    # image lacks, then the project editable from this tree, as `make install` does.
    local pip=(python3 -m pip -q --disable-pip-version-check --no-cache-dir)
    "${pip[@]}" install --no-index --no-deps "${WHEELS}"/*.whl || return 1
    local dists=(core accelerators strategies precision environments meta)
    for plugin in plugins/*/pyproject.toml; do
        case $plugin in */horovod/*|*/fairscale/*) continue ;; esac  # their libraries: not there
        dists+=("$(dirname "$plugin")")
    done
    local editable=()
    for d in "${dists[@]}"; do editable+=(-e "./$d"); done
    "${pip[@]}" install --no-index --no-deps --no-build-isolation "${editable[@]}" || return 1
    python3 -m pip list 2>/dev/null | grep -i -E "^(torch|lightning|pytorch-lightning|fulmen|deepspeed|jsonargparse) "
}

summary() { echo "$*" | tee -a "$OUT/summary.txt"; }

case $MODE in
--prepare)
    prepare
    ;;
--dry-run)
    missing=0
    for name in "${PURE[@]}" "${BINARY[@]}" deepspeed; do
        stem=${name//-/_}
        ls "$WHEELS"/"${stem}"-*.whl >/dev/null 2>&1 || ls "$WHEELS"/"${name}"-*.whl \
            >/dev/null 2>&1 || { echo "missing wheel: $name (run tools/device-check.sh --prepare)"; missing=1; }
    done
    size=$(du -sm "$WHEELS" 2>/dev/null | cut -f1)
    echo "wheels: ${size:-0} MiB of the 64 MiB a device call carries"
    [ "$missing" = 0 ] || exit 1
    export FULMEN_GPU_TIER_DEVICE=cpu OMP_NUM_THREADS=1
    make -s install >/dev/null || exit 1
    timeout 600 .venv/bin/python -m pytest -q -p no:cacheprovider tests/gpu || exit 1
    timeout 600 .venv/bin/python tests/benchmarks/gpu_throughput.py --dry-run \
        --out "$OUT/gpu-bench.json" || exit 1
    echo "dry run passed: the device run is ready (tools/device-check.sh on the GPU machine)"
    ;;
run)
    start=$(date +%s)
    : > "$OUT/summary.txt"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
        | tee "$OUT/gpu.txt"
    summary "card: $(head -1 "$OUT/gpu.txt"); date: $(date -u +%F)"
    if ! install > "$OUT/install.log" 2>&1; then
        summary "install FAILED (install.log)"; tail -30 "$OUT/install.log"; exit 1
    fi
    summary "installed in $(( $(date +%s) - start )) s"
    python3 -c "import torch, fulmen; print('torch', torch.__version__, 'cuda',
torch.version.cuda, torch.cuda.get_device_name())" | tee -a "$OUT/summary.txt"
    t0=$(date +%s)
    timeout "${TEST_TIMEOUT:-180}" make test-gpu PY=python3 PYTEST_ARGS="--junitxml=$OUT/gpu-tests.xml" \
        > "$OUT/gpu-tests.log" 2>&1
    tests_rc=$?
    tail -25 "$OUT/gpu-tests.log"
    summary "make test-gpu: rc=$tests_rc in $(( $(date +%s) - t0 )) s: $(grep -E \
        '(passed|failed|error)' "$OUT/gpu-tests.log" | tail -1)"
    # where the host waits for the device in a Trainer step (a profile of three steps)
    timeout 120 python3 tests/benchmarks/gpu_throughput_worker.py --contender fulmen \
        --warmup 8 --steps 12 --profile 3 > "$OUT/profile-fulmen.txt" 2>&1
    grep -A12 "calls that can wait" "$OUT/profile-fulmen.txt" | head -14
    t0=$(date +%s)
    timeout "${BENCH_TIMEOUT:-360}" python3 tests/benchmarks/gpu_throughput.py \
        --budget "${BENCH_BUDGET:-260}" --out "$OUT/gpu-bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu-bench.log"
    bench_rc=${PIPESTATUS[0]}
    summary "benchmark: rc=$bench_rc in $(( $(date +%s) - t0 )) s"
    summary "total $(( $(date +%s) - start )) s"
    [ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ]
    ;;
*)
    echo "usage: tools/device-check.sh [--prepare | --dry-run]" >&2; exit 2
    ;;
esac
