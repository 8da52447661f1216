"""Benchmark: 2 CPU processes, gloo, a small MLP on scikit-learn's digits.

Samples/s of ``Trainer(strategy="ddp", devices=2)`` against a plain PyTorch DDP script under
torchrun, measured in the same run (goal >= 0.95x); wall time from the command's start to the
first step for ``ddp``, ``ddp_spawn`` and torchrun; a Lite loop under ``ddp`` (goal >= 0.97x);
per-rank bytes of parameters + Adam state for ``fsdp`` and ``ddp`` on a 2.2M-parameter model
(goal: fsdp <= 1/2 + 10% of ddp).

    .venv/bin/python tests/benchmarks/ddp.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKER = str(Path(__file__).with_name("ddp_worker.py"))
REPEATS = 7


def run(*command: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["FULMEN_BENCH_T0"] = repr(time.time())
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(lines[-1])


def main() -> None:
    py = sys.executable
    torchrun = [py, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29611",
                WORKER, "plain"]
    results: dict[str, list[dict[str, float]]] = {"torchrun": [], "ddp": [], "ddp_spawn": [],
                                                  "lite ddp": []}
    for _ in range(REPEATS):  # interleaved, so machine noise hits all alike
        results["torchrun"].append(run(*torchrun))
        results["ddp"].append(run(py, WORKER, "ddp"))
        results["ddp_spawn"].append(run(py, WORKER, "ddp_spawn"))
        results["lite ddp"].append(run(py, WORKER, "lite"))

    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    def ratio(name: str) -> float:  # median of the ratios of runs made side by side
        return statistics.median(r["samples_per_s"] / b["samples_per_s"]
                                 for r, b in zip(results[name], results["torchrun"], strict=True))

    print(f"2 CPU processes, gloo, MLP 64-128-128-10 on digits, batch 32 per rank, median of "
          f"{REPEATS} interleaved runs; ratio = median of the per-repeat ratios to torchrun")
    for name in results:
        goal = {"ddp": " (goal >= 0.95x)", "lite ddp": " (goal >= 0.97x)"}.get(name, "")
        print(f"  {name:<10} {median(name, 'samples_per_s'):9.0f} samples/s  {ratio(name):5.3f}x"
              f"{goal}   first step after {median(name, 'first_step_s'):.2f} s")
    ddp = run(py, WORKER, "ddp", "wide")["state_bytes"]
    fsdp = run(py, WORKER, "fsdp", "wide")["state_bytes"]
    print(f"per-rank parameters + Adam state, MLP 64-1024-1024-10 (2.2M params): ddp "
          f"{ddp / 1e6:.2f} MB, fsdp {fsdp / 1e6:.2f} MB -> {fsdp / ddp:.3f} of ddp "
          f"(goal <= {0.5 + 0.1:.2f})")


if __name__ == "__main__":
    main()
