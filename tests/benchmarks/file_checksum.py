"""Benchmark: what the CRC-32C of a single checkpoint file costs (CPU).

A 1 GiB state (16 float32 tensors) is written once by ``torch.save`` and once by fulmen
(``filesum.save``: ``torch.save`` through a writer that checksums every byte and stores the
result in the zip comment). Each timing is the median of ``FULMEN_BENCH_REPEATS`` (5) runs,
alternating, from the page cache (the file was just written, as when resuming on the machine
that saved):

- save: ``torch.save`` to a file handle against ``filesum.save`` to one. Goal: >= 0.9x.
- load: ``torch.load`` of the stamped file (no check) against fulmen's ``safe_load`` of it
  (the safe checks, and the CRC-32C computed in a thread while ``torch.load`` reads, compared
  before the dictionary is returned). Goal: >= 0.95x (the issue: within 5% of load time).
- the checksum alone (a memory-mapped pass, no load), for scale.

    FULMEN_BENCH_CKPT_MB=1024 .venv/bin/python tests/benchmarks/file_checksum.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

SIZE_MB = int(os.environ.get("FULMEN_BENCH_CKPT_MB", "1024"))
REPEATS = int(os.environ.get("FULMEN_BENCH_REPEATS", "5"))


CPU: list[tuple[str, float]] = []  # (which, process CPU seconds), every thread counted


def timed(fn: Any) -> float:
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    CPU.append((getattr(fn, "__name__", "?"), time.process_time() - cpu))
    return time.perf_counter() - start


def pair(a: Any, b: Any, settle: Any = lambda: None) -> tuple[float, float]:
    times_a, times_b = [], []
    for _ in range(REPEATS):
        settle()
        times_a.append(timed(a))
        settle()
        times_b.append(timed(b))
    return statistics.median(times_a), statistics.median(times_b)


def main() -> None:
    import torch

    from fulmen.api.checkpoint_io import safe_load
    from fulmen.checkpoint import filesum

    tensors = 16
    per = SIZE_MB * (1 << 20) // 4 // tensors
    state = {"state_dict": {f"layer{i}.weight": torch.randn(1024, per // 1024)
                            for i in range(tensors)}, "epoch": 1}
    with tempfile.TemporaryDirectory(prefix="fulmen-bench-crc-") as root:
        plain, ours = Path(root, "plain.pt"), Path(root, "fulmen.ckpt")

        def save_plain() -> None:
            with open(plain, "wb") as handle:
                torch.save(state, handle)

        def save_ours() -> None:
            with open(ours, "wb") as handle:
                filesum.save(state, handle)

        save = pair(save_plain, save_ours, os.sync)
        assert filesum.stored_in(ours) is not None
        def load_plain() -> None:
            torch.load(ours, weights_only=True, map_location="cpu")

        def load_ours() -> None:
            safe_load(ours)

        load = pair(load_plain, load_ours)
        size = ours.stat().st_size
        alone = statistics.median(timed(lambda: filesum.check(ours)) for _ in range(REPEATS))
    print(f"{SIZE_MB} MiB, median of {REPEATS}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"save: torch.save {save[0]:.3f} s, fulmen (with CRC-32C) {save[1]:.3f} s  "
          f"ratio {save[0] / save[1]:.3f}x")
    print(f"load: torch.load {load[0]:.3f} s, fulmen (CRC-32C compared) {load[1]:.3f} s  "
          f"ratio {load[0] / load[1]:.3f}x  (cost {100 * (load[1] / load[0] - 1):+.1f}%)")
    print(f"checksum alone: {alone:.3f} s ({size / alone / 1e9:.1f} GB/s)")
    cpu = {name: statistics.median(c for n, c in CPU if n == name)
           for name in ("load_plain", "load_ours")}
    print(f"load CPU time (all threads): torch.load {cpu['load_plain']:.3f} s, fulmen "
          f"{cpu['load_ours']:.3f} s (+{cpu['load_ours'] - cpu['load_plain']:.3f} s): what the "
          "load costs where no core is idle; with one idle, the wall time above hides it")


if __name__ == "__main__":
    main()
