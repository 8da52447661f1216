"""Benchmark: what the CRC-32C of a single checkpoint file costs, saving and loading.

A 1 GiB state (16 float32 tensors) is written by ``torch.save`` and by fulmen (``filesum.save``:
``torch.save`` through a writer that checksums every byte and stores the result in the zip
comment). From the page cache (the file was just written, as when resuming on the machine that
saved), in paired rounds: each round times both sides back to back, the order alternating
from round to round, and the ratio of the round is kept; the median of the rounds' ratios is
printed, for the wall time and for the CPU time of every thread of the process.

- load: ``torch.load(path)`` of the stamped file (no check) against fulmen's ``safe_load`` of
  it (the safe checks, and the CRC-32C computed from the bytes ``torch.load`` reads, as it
  reads them, compared before the dictionary is returned). Goal: cost <= 5%, CPU and wall.
  ``torch.load`` of an open file (Python reads for it: the way fulmen's load reads) is shown
  for scale.
- peak memory of one load of each kind, each in a fresh process (the rise of the peak resident
  set over the resident set before the load, Linux's ``VmHWM``).
- save: ``torch.save`` to a file handle against ``filesum.save`` to one (dirty pages written
  out before each). Goal: >= 0.9x.
- the checksum alone (a memory-mapped pass, no load), for scale.

    FULMEN_BENCH_CKPT_MB=1024 FULMEN_BENCH_ROUNDS=15 \\
        .venv/bin/python tests/benchmarks/file_checksum.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SIZE_MB = int(os.environ.get("FULMEN_BENCH_CKPT_MB", "1024"))
ROUNDS = int(os.environ.get("FULMEN_BENCH_ROUNDS", "15"))
SAVE_ROUNDS = int(os.environ.get("FULMEN_BENCH_REPEATS", "5"))


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every thread of this process) of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def paired(a: Callable[[], object], b: Callable[[], object], rounds: int,
           settle: Callable[[], None] = lambda: None) -> dict[str, float]:
    """Median times of ``a`` and ``b`` and the median of the rounds' ratios b/a (wall, CPU);
    ``a`` runs first in even rounds, ``b`` in odd ones."""
    a(), b()  # warm: imports, the page cache
    got: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
    for i in range(rounds):
        for side in ("ab" if i % 2 == 0 else "ba"):
            settle()
            got[side].append(timed(a if side == "a" else b))
    out = {}
    for n, what in enumerate(("wall", "cpu")):
        out[f"a_{what}"] = statistics.median(t[n] for t in got["a"])
        out[f"b_{what}"] = statistics.median(t[n] for t in got["b"])
        out[f"ratio_{what}"] = statistics.median(y[n] / x[n] for x, y in zip(got["a"],
                                                                            got["b"]))
    return out


PEAK = """
import sys, torch


def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(key + ":"))


path, how = sys.argv[1], sys.argv[2]
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # the peak resident set starts again from the current one
before = status("VmRSS")
if how == "torch":
    state = torch.load(path, weights_only=True, map_location="cpu")
else:
    from fulmen.api.checkpoint_io import safe_load
    state = safe_load(path)
print((status("VmHWM") - before) / 1024)
"""


def peak_mib(path: Path, how: str) -> float:
    """The rise of a fresh process's peak resident memory over one load (MiB)."""
    done = subprocess.run([sys.executable, "-c", PEAK, str(path), how], capture_output=True,
                          text=True, check=True)
    return float(done.stdout.strip())


def main() -> None:
    import torch

    from fulmen.api.checkpoint_io import safe_load
    from fulmen.checkpoint import filesum

    torch.set_num_threads(1)
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

        save = paired(save_plain, save_ours, SAVE_ROUNDS, os.sync)
        state.clear()  # the loads below measure their own memory
        assert filesum.stored_in(ours) is not None

        def load_plain() -> None:
            torch.load(ours, weights_only=True, map_location="cpu")

        def load_ours() -> None:
            safe_load(ours)

        def load_handle() -> None:
            with open(ours, "rb", buffering=0) as handle:
                torch.load(handle, weights_only=True, map_location="cpu")

        load = paired(load_plain, load_ours, ROUNDS)
        handle = paired(load_plain, load_handle, max(3, ROUNDS // 3))
        peaks = {how: peak_mib(ours, how) for how in ("torch", "fulmen")}
        size = ours.stat().st_size
        alone = statistics.median(timed(lambda: filesum.check(ours))[0] for _ in range(5))
    print(f"{SIZE_MB} MiB, {ROUNDS} paired rounds (median of the rounds' ratios), "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    for what in ("wall", "cpu"):
        print(f"load {what:>4}: torch.load {load[f'a_{what}']:.3f} s, fulmen (CRC-32C compared) "
              f"{load[f'b_{what}']:.3f} s  ratio {load[f'ratio_{what}']:.3f}x  "
              f"(cost {100 * (load[f'ratio_{what}'] - 1):+.1f}%, goal <= +5%)")
    print(f"for scale, torch.load of an open file against torch.load of the path: wall "
          f"{handle['ratio_wall']:.3f}x, CPU {handle['ratio_cpu']:.3f}x")
    print(f"peak resident memory of one load: torch.load +{peaks['torch']:.0f} MiB, fulmen "
          f"+{peaks['fulmen']:.0f} MiB")
    print(f"save: torch.save {save['a_wall']:.3f} s, fulmen (with CRC-32C) {save['b_wall']:.3f} s"
          f"  ratio {save['a_wall'] / save['b_wall']:.3f}x (median of {SAVE_ROUNDS} rounds)")
    print(f"checksum alone: {alone:.3f} s ({size / alone / 1e9:.1f} GB/s)")


if __name__ == "__main__":
    main()
