"""The CUDA tier stays runnable from a machine without a GPU: ``make test-gpu`` collects every
file that holds a ``gpu`` test, and the GPU benchmark's worker still trains (a tiny model on the
CPU), so neither rots between the rare runs on a lent GPU."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_test_gpu_collects_every_file_with_a_gpu_test() -> None:
    listed = re.search(r"^GPU_TESTS \?= (.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert listed, "the Makefile defines no GPU_TESTS"
    paths = [ROOT / p for p in listed.group(1).split()]
    decorator = re.compile(r"^\s*@pytest\.mark\.gpu\b|pytestmark = .*mark\.gpu", re.M)
    marked = {p for p in (ROOT / "tests").rglob("test_*.py") if decorator.search(p.read_text())}
    missing = sorted(str(p.relative_to(ROOT)) for p in marked
                     if not any(p == q or q in p.parents for q in paths))
    assert not missing, f"add to GPU_TESTS in the Makefile: {missing}"


def test_the_gpu_benchmark_worker_trains_a_tiny_model_on_the_cpu() -> None:
    worker = ROOT / "tests" / "benchmarks" / "gpu_throughput_worker.py"
    done = subprocess.run([sys.executable, str(worker), "--contender", "fulmen", "--size", "tiny",
                           "--batch", "2", "--warmup", "1", "--steps", "2"],
                          capture_output=True, text=True, timeout=240,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["contender"] == "fulmen" and result["tokens_per_s"] > 0
    assert result["flops_per_step"] > 0
