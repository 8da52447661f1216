"""The hang doctor: when a run stops making progress, every rank says where it waits.

A daemon thread reads the run's progress counter every few seconds; the training loop itself does
nothing extra per step. When the counter has not moved for ``threshold`` seconds
(``FULMEN_HANG_TIMEOUT``, default 300), each rank logs its rank, host and pid, the collective it is
in (found on the main thread's stack, with the shapes of its tensors) and the user's ``file:line``
that issued it. With the rendezvous address known, each rank also posts its report to a store on
``main_address:main_port + 1`` hosted by rank 0, and rank 0 logs a one-screen summary of who waits
where, naming the ranks that sent nothing. Reports go to the ``fulmen.hang`` logger; nothing is
stopped: the collective timeout still ends the run.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Hashable
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger("fulmen.hang")
DEFAULT_THRESHOLD = 300.0
_COLLECTIVE_FILES = ("distributed_c10d.py", "c10d_logger.py")
_TENSOR_LOCALS = ("tensor", "tensor_list", "output_tensor_list", "input_tensor_list",
                  "object_list", "output", "input")
_LIBRARIES = tuple(dict.fromkeys(  # the standard library and installed packages
    [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")] + ["<"]))
_BACKWARD_FILES = ("autograd" + os.sep + "__init__.py", "autograd" + os.sep + "graph.py",
                   "_tensor.py")


def threshold_from_env() -> float:
    """``FULMEN_HANG_TIMEOUT`` in seconds (``0`` turns the doctor off)."""
    raw = os.environ.get("FULMEN_HANG_TIMEOUT", str(DEFAULT_THRESHOLD))
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        from fulmen.errors import ConfigurationError

        raise ConfigurationError(f"FULMEN_HANG_TIMEOUT={raw!r}: give seconds (a number >= 0; 0 "
                                 "turns the hang doctor off)")
    return value


class HangDoctor:
    """Watch ``progress()`` (any value that changes while the run advances) from a daemon
    thread.

    ``address``/``port``: the rendezvous of the run; the doctor's store listens on ``port + 1``
    (rank 0) so ranks can share their reports. Without them each rank only logs its own.
    """

    def __init__(self, progress: Callable[[], Hashable], *, rank: int = 0, world_size: int = 1,
                 threshold: float | None = None, address: str | None = None,
                 port: int | None = None) -> None:
        self.progress, self.rank, self.world_size = progress, rank, world_size
        self.threshold = threshold_from_env() if threshold is None else threshold
        self.address, self.port = address, port
        self.reports = 0
        self._main = threading.main_thread()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._store: Any = None

    def start(self) -> HangDoctor:
        if self.threshold > 0 and self._thread is None:
            from fulmen.status import configure_logging

            configure_logging()
            self._thread = threading.Thread(target=self._watch, name="fulmen-hang-doctor",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> HangDoctor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the watching thread

    def _watch(self) -> None:
        interval = min(max(self.threshold / 4, 0.2), 5.0)
        last, since, reported = self.progress(), time.monotonic(), False
        while not self._stop.wait(interval):
            now, current = time.monotonic(), self.progress()
            if current != last:
                last, since, reported = current, now, False
            elif not reported and now - since >= self.threshold:
                reported = True
                self._report(now - since)

    def _report(self, waited: float) -> None:
        frame = sys._current_frames().get(self._main.ident or -1)
        report = diagnose(frame, self.rank, waited)
        self.reports += 1
        log.error("%s", format_report(report))
        store = self._connect()
        if store is None:
            return
        try:
            store.set(f"fulmen/hang/{self.rank}", json.dumps(report))
            if self.rank == 0:
                time.sleep(min(self.threshold, 5.0))  # let the other ranks post theirs
                log.error("%s", summarize(self._collect(store), self.world_size))
        except Exception as exc:  # the store is a help; losing it must not hide the report
            log.warning("hang doctor: could not share reports through %s:%s: %s",
                        self.address, (self.port or 0) + 1, exc)

    def _connect(self) -> Any:
        if self._store is not None or self.address is None or self.port is None \
                or self.world_size < 2:
            return self._store
        from torch.distributed import TCPStore

        try:
            self._store = TCPStore(self.address, self.port + 1, self.world_size,
                                   is_master=self.rank == 0, timeout=timedelta(seconds=10),
                                   wait_for_workers=False)
        except Exception as exc:
            log.warning("hang doctor: no report store at %s:%s (%s); each rank reports alone",
                        self.address, self.port + 1, exc)
        return self._store

    def _collect(self, store: Any) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        for rank in range(self.world_size):
            key = f"fulmen/hang/{rank}"
            if store.check([key]):
                out[rank] = json.loads(store.get(key))
        return out


def diagnose(frame: FrameType | None, rank: int, waited: float) -> dict[str, Any]:
    """Where the main thread waits: the collective in flight (if any), its tensors' shapes, and
    the innermost frame of the user's own code."""
    stack = traceback.extract_stack(frame) if frame is not None else []
    collective, shapes = None, []
    f = frame
    while f is not None:
        if Path(f.f_code.co_filename).name in _COLLECTIVE_FILES and collective is None:
            collective = f.f_code.co_name
            shapes = _shapes(f.f_locals)
        elif collective is None and f.f_code.co_filename.endswith(_BACKWARD_FILES) and \
                "backward" in f.f_code.co_name:
            collective = "backward (a DDP gradient all-reduce waits here)"
        f = f.f_back
    library = _LIBRARIES + _fulmen_folders()
    user = next((s for s in reversed(stack) if not s.filename.startswith(library)),
                stack[-1] if stack else None)
    return {"rank": rank, "host": socket.gethostname(), "pid": os.getpid(),
            "waited_s": round(waited, 1), "collective": collective, "shapes": shapes,
            "where": f"{user.filename}:{user.lineno}" if user else "unknown",
            "code": (user.line or "") if user else "",
            "stack": traceback.format_list(stack[-8:])}


def _fulmen_folders() -> tuple[str, ...]:
    """Where fulmen and its plugin packages live (editable installs are outside site-packages)."""
    folders = set()
    for name, module in list(sys.modules.items()):
        path = vars(module).get("__file__") if name.split(".")[0].startswith("fulmen") else None
        if path and "." not in name:
            folders.add(str(Path(path).resolve().parent))
    return tuple(sorted(folders))


def _shapes(local_vars: dict[str, Any]) -> list[Any]:
    import torch

    out: list[Any] = []
    for name in _TENSOR_LOCALS:
        value = local_vars.get(name)
        items = value if isinstance(value, list | tuple) else [value]
        out += [list(v.shape) for v in items if isinstance(v, torch.Tensor)]
    return out


def format_report(report: dict[str, Any]) -> str:
    what = f"in {report['collective']}{report['shapes'] or ''}" if report["collective"] else \
        "outside any collective"
    return (f"hang doctor: rank {report['rank']} ({report['host']}, pid {report['pid']}) has made "
            f"no progress for {report['waited_s']} s, waiting {what} at {report['where']}: "
            f"{report['code']}\n" + "".join(report["stack"]))


def summarize(reports: dict[int, dict[str, Any]], world_size: int) -> str:
    lines = [f"hang doctor: who waits where ({len(reports)} of {world_size} ranks reported)"]
    for rank in range(world_size):
        r = reports.get(rank)
        if r is None:
            lines.append(f"  rank {rank}: no report (dead, or still making progress)")
            continue
        what = r["collective"] or "no collective"
        lines.append(f"  rank {rank} {r['host']} pid {r['pid']}: {what} at {r['where']}")
    outside = [r for r in reports.values() if r["collective"] is None]
    if outside and len(outside) < len(reports):
        lines.append("  ranks outside a collective keep the others waiting: look at "
                     + ", ".join(f"rank {r['rank']} ({r['where']})" for r in outside))
    return "\n".join(lines)
