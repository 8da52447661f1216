"""Benchmark: where a short 2-process job spends its time, fulmen against torchrun.

A 100-step DDP job on digits (2 CPU processes, gloo), run as a whole command: plain PyTorch DDP
under ``torchrun``, ``Trainer(strategy="ddp")``, ``Trainer(strategy="ddp_spawn")`` and Lite
under ``ddp``, interleaved. For each, the median over repeats of the seconds from the command's
start to each phase on each rank (see startup_worker.py), and the whole command's wall time with
its ratio to torchrun's (measured by this process, from start to exit).

    .venv/bin/python tests/benchmarks/startup.py [REPEATS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKER = str(Path(__file__).with_name("startup_worker.py"))
PHASES = ("interpreter", "imports", "composed", "launched", "group", "first_batch", "first_step",
          "last_step", "finished", "exit")


def run(command: list[str]) -> tuple[float, dict[str, dict[str, float]]]:
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "marks.jsonl")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        start = time.time()
        env.update(FULMEN_BENCH_T0=repr(start), FULMEN_BENCH_OUT=out)
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        wall = time.time() - start
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
        ranks = {}
        for line in Path(out).read_text().splitlines():
            record = json.loads(line)
            ranks[record.pop("rank")] = record
    return wall, ranks


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    py = sys.executable
    commands = {
        "torchrun": [py, "-m", "torch.distributed.run", "--nproc_per_node=2",
                     "--master_port=29613", WORKER, "plain"],
        "ddp": [py, WORKER, "ddp"],
        "ddp_spawn": [py, WORKER, "ddp_spawn"],
        "lite ddp": [py, WORKER, "lite"],
    }
    walls: dict[str, list[float]] = {name: [] for name in commands}
    marks: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in commands}
    for _ in range(repeats):  # interleaved, so machine noise hits all alike
        for name, command in commands.items():
            wall, ranks = run(command)
            walls[name].append(wall)
            marks[name].append(ranks)
    print(f"2 CPU processes, gloo, 100 steps of an MLP on digits; medians of {repeats} "
          "interleaved runs; seconds since the command started")
    header = f"  {'':<10} {'rank':<5}" + "".join(f"{p[:11]:>12}" for p in PHASES)
    print(header)
    for name in commands:
        for rank in sorted({r for m in marks[name] for r in m}):
            cells = []
            for phase in PHASES:
                values = [m[rank][phase] for m in marks[name] if phase in m.get(rank, {})]
                cells.append(f"{statistics.median(values):12.2f}" if values else f"{'-':>12}")
            print(f"  {name:<10} {rank:<5}" + "".join(cells))
    base = statistics.median(walls["torchrun"])
    print("\nwhole command (start to exit), median, and the median of per-repeat ratios:")
    for name in commands:
        ratio = statistics.median(w / t for w, t in zip(walls[name], walls["torchrun"]))
        print(f"  {name:<10} {statistics.median(walls[name]):6.2f} s  {ratio:5.2f}x torchrun"
              f" ({base:.2f} s)")


if __name__ == "__main__":
    main()
