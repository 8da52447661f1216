"""CPU threads per process: the processes a launcher starts on one node share its cores.

Unless the user set ``OMP_NUM_THREADS``, each local process gets ``max(1, cores // processes)``
threads (torchrun sets 1), so ``devices=4`` on a 2-core machine does not run 4 processes that
each use every core. More processes than cores gets one warning that says what to expect.
"""

from __future__ import annotations

import os
import warnings


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def thread_settings(local_processes: int, strategy_name: str) -> dict[str, str]:
    """The variables to give every local process (empty when the user chose)."""
    cores = usable_cores()
    if local_processes > cores:
        warnings.warn(
            f"strategy={strategy_name!r} starts {local_processes} processes on this node, which "
            f"has {cores} usable CPU cores: they will share them (each gets 1 thread unless "
            "OMP_NUM_THREADS is set), so expect every process to run slower than alone",
            UserWarning, stacklevel=3)
    if "OMP_NUM_THREADS" in os.environ:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, cores // max(local_processes, 1)))}


def apply_in_process(settings: dict[str, str]) -> None:
    """In a process where torch is imported already: follow ``settings`` now."""
    if "OMP_NUM_THREADS" in settings:
        import torch

        torch.set_num_threads(int(settings["OMP_NUM_THREADS"]))
