"""The hang doctor: when a run stops making progress, every rank says where it waits, and a
multi-process job then ends with an error instead of waiting for the collective timeout.

A daemon thread reads the run's progress every few seconds; the training loop itself does
nothing extra per step. It is armed when fulmen takes over a process (``Trainer.fit`` and the
other stages, ``Lite``'s process setup) and covers every place a rank can wait for another:
process-group creation, strategy setup, broadcasts, barriers, ``prepare_data``/``setup``, the
first batch, the loops. Each of them runs inside a :func:`phase`, whose name the report carries.

Progress is the caller's counter, a change of phase, or the main thread working (using CPU
while its stack changes); a thread that waits keeps its stack. When none has moved for
``threshold`` seconds (``FULMEN_HANG_TIMEOUT``, default 300),
each rank logs its rank, host and pid, the phase, the collective it is in (found on the main
thread's stack, with the shapes of its tensors), the innermost frame outside torch and the
standard library (``inside``: a plugin's line, or fulmen's) and the user's own ``file:line``.
With the rendezvous address known, each rank also posts its report to a store on
``main_address:main_port + 1`` hosted by rank 0, and rank 0 logs a one-screen summary of who
waits where, naming the ranks that sent nothing.

Then, in a job of several processes, each rank ends itself with :data:`EXIT_CODE` after
logging ``fulmen.errors.HangError`` (the main thread, blocked inside a collective, cannot be
interrupted; the process is ended from the doctor's thread). ``FULMEN_HANG_ACTION=report``
keeps the older behaviour: report, and leave the ending to the collective timeout. A single
process only reports (no other rank can be waiting for it).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import logging
import os
import socket
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Hashable, Iterator
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import IO, Any

log = logging.getLogger("fulmen.hang")
DEFAULT_THRESHOLD = 300.0
_COLLECTIVE_FILES = ("distributed_c10d.py", "c10d_logger.py")
_TENSOR_LOCALS = ("tensor", "tensor_list", "output_tensor_list", "input_tensor_list",
                  "object_list", "output", "input")
_LIBRARIES = tuple(dict.fromkeys(  # the standard library and installed packages
    [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")] + ["<"]))
_BACKWARD_FILES = ("autograd" + os.sep + "__init__.py", "autograd" + os.sep + "graph.py",
                   "_tensor.py")


#: the exit status of a rank the hang doctor ended
EXIT_CODE = 86
_SUMMARIZED = "fulmen/hang/summarized"
_phase_lock = threading.Lock()
_phase: dict[str, Any] = {"name": "process start", "changes": 0, "allow": 0.0}


@contextlib.contextmanager
def phase(name: str, allow: float = 0.0) -> Iterator[None]:
    """Run the block as the named phase (``"prepare_data"``, ``"barrier 'x'"``): reports say
    it, and entering or leaving a phase counts as progress. ``allow``: seconds the block may
    wait without being a hang, for a wait with a timeout of its own that says more (the
    rendezvous names the ranks that never arrived); the doctor waits at least that long."""
    with _phase_lock:
        before = (_phase["name"], _phase["allow"])
        _phase["name"], _phase["allow"] = name, float(allow)
        _phase["changes"] += 1
    try:
        yield
    finally:
        with _phase_lock:
            _phase["name"], _phase["allow"] = before
            _phase["changes"] += 1


@contextlib.contextmanager
def watching(name: str, strategy: Any) -> Iterator[None]:
    """Run the block as phase ``name`` under a hang doctor of its own, when ``strategy`` runs
    several processes (``Lite``: process setup, barriers, broadcasts; the Trainer watches its
    whole run instead)."""
    if strategy.world_size < 2:
        yield
        return
    env = strategy.cluster_environment
    doctor = HangDoctor(lambda: 0, rank=strategy.global_rank, world_size=strategy.world_size,
                        address=env.main_address, port=env.main_port).start()
    try:
        with phase(name):
            yield
    finally:
        doctor.stop()


def current_phase() -> str:
    """The innermost :func:`phase` the process is in."""
    return str(_phase["name"])


def phase_changes() -> int:
    """How many times the phase changed in this process (progress, for the doctor)."""
    return int(_phase["changes"])


def action_from_env() -> str:
    """``FULMEN_HANG_ACTION``: ``exit`` (default: report, then end the job) or ``report``."""
    raw = os.environ.get("FULMEN_HANG_ACTION", "exit").strip().lower() or "exit"
    if raw not in ("exit", "report"):
        from fulmen.errors import ConfigurationError

        raise ConfigurationError(f"FULMEN_HANG_ACTION={raw!r}: use 'exit' (report, then end "
                                 "the job with an error) or 'report' (report only)")
    return raw


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
                 port: int | None = None, action: str | None = None,
                 describe_phase: Callable[[], str] = current_phase) -> None:
        self.progress, self.rank, self.world_size = progress, rank, world_size
        self.threshold = threshold_from_env() if threshold is None else threshold
        self.action = action_from_env() if action is None else action
        self.describe_phase = describe_phase
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
        working = _Working(self._main)

        def progress() -> Hashable:
            return phase_changes(), self.progress()

        last, since, reported = progress(), time.monotonic(), False
        with contextlib.closing(working):
            while not self._stop.wait(interval):
                now, current = time.monotonic(), progress()
                if current != last or working.since_last(interval):
                    last, since, reported = current, now, False
                elif not reported and now - since >= max(self.threshold, _phase["allow"]):
                    reported = True
                    self._report(now - since)

    def _report(self, waited: float) -> None:
        frame = sys._current_frames().get(self._main.ident or -1)
        report = diagnose(frame, self.rank, waited)
        report["phase"] = self.describe_phase()
        self.reports += 1
        log.error("%s", format_report(report))
        self._share(report)
        if self.action == "exit" and self.world_size > 1 and not self._stop.is_set():
            self._end(report)

    def _share(self, report: dict[str, Any]) -> None:
        store = self._connect()
        if store is None:
            return
        try:
            store.set(f"fulmen/hang/{self.rank}", json.dumps(report))
            if self.rank == 0:
                time.sleep(min(self.threshold, 5.0))  # let the other ranks post theirs
                log.error("%s", summarize(self._collect(store), self.world_size))
                store.set(_SUMMARIZED, "1")
            else:  # rank 0 hosts the store: stay until it has summed up (or gave up),
                store.wait([_SUMMARIZED], timedelta(seconds=min(self.threshold, 5.0) + 30))
                time.sleep(2.0)  # and let it end first: its exit status is the job's
        except Exception as exc:  # the store is a help; losing it must not hide the report
            log.warning("hang doctor: could not share reports through %s:%s: %s",
                        self.address, (self.port or 0) + 1, exc)

    def _end(self, report: dict[str, Any]) -> None:
        """End this process: its main thread waits inside a collective (or a stalled call)
        that nothing will interrupt before the collective timeout."""
        from fulmen.errors import HangError

        error = HangError(
            f"rank {self.rank} of {self.world_size} made no progress for "
            f"{report['waited_s']} s in phase {report['phase']!r}, at {report['inside']} "
            f"(your code: {report['where']}); the hang doctor ended it with exit status "
            f"{EXIT_CODE} rather than wait for the collective timeout. The report above says "
            "where every rank waits. If this phase legitimately takes longer (a long "
            "prepare_data download), raise FULMEN_HANG_TIMEOUT (now "
            f"{self.threshold:g} s); FULMEN_HANG_ACTION=report only reports.")
        log.error("%s.%s: %s", type(error).__module__, type(error).__name__, error)
        for handler in [*log.handlers, *logging.getLogger().handlers]:
            with contextlib.suppress(Exception):
                handler.flush()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(EXIT_CODE)

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


class _Working:
    """Whether the main thread worked since the last look: it used CPU for at least a fifth of
    the interval *and* its stack changed (imports, Python code running). A rank that waits
    for another — in a collective, a barrier, a sleep, a spinning device sync — keeps its
    stack, so only the counters tell its progress."""

    def __init__(self, main: threading.Thread) -> None:
        self._main = main
        try:
            self._clock: int | None = time.pthread_getcpuclockid(main.ident or 0)
        except (AttributeError, OSError):  # not on this platform: counters only
            self._clock = None
        self._dump: IO[bytes] | None = None
        self._cpu = self._cpu_time()
        self._stack = self._signature()

    def _cpu_time(self) -> float:
        if self._clock is None:
            return 0.0
        try:
            return time.clock_gettime(self._clock)
        except OSError:
            return 0.0

    def _signature(self) -> str:
        """The main thread's stack as text. Walking another thread's frame objects from here
        (``sys._current_frames()`` then ``f_back``) races with that thread's calls and returns
        and can crash CPython 3.11 (cpython#111363); ``faulthandler`` reads the raw frames in
        one C call, under the GIL, and creates no frame object."""
        if self._dump is None:
            self._dump = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._dump.seek(0)
        self._dump.truncate()
        faulthandler.dump_traceback(self._dump, all_threads=True)
        self._dump.seek(0)
        text = self._dump.read().decode(errors="replace")
        marker = f"hread 0x{self._main.ident or 0:016x}"
        start = text.find(marker)
        if start < 0:
            return ""
        end = text.find("\n\n", start)
        return text[start:end if end >= 0 else len(text)]

    def close(self) -> None:
        if self._dump is not None:
            self._dump.close()

    def since_last(self, interval: float) -> bool:
        if self._clock is None:
            return False
        cpu, stack = self._cpu_time(), self._signature()
        worked = cpu - self._cpu >= 0.2 * interval and stack != self._stack
        self._cpu, self._stack = cpu, stack
        return worked


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
    inside = next((s for s in reversed(stack) if _beyond_torch(s.filename)), user)
    return {"rank": rank, "host": socket.gethostname(), "pid": os.getpid(),
            "waited_s": round(waited, 1), "collective": collective, "shapes": shapes,
            "where": f"{user.filename}:{user.lineno}" if user else "unknown",
            "code": (user.line or "") if user else "",
            "inside": (f"{inside.filename}:{inside.lineno} ({inside.name})" if inside
                       else "unknown"),
            "stack": traceback.format_list(stack[-8:])}


def _beyond_torch(filename: str) -> bool:
    """A frame worth naming as where a rank is: not torch's, not the standard library's (a
    plugin's, fulmen's or the user's)."""
    paths = sysconfig.get_paths()
    packages = (paths["purelib"], paths["platlib"])
    torch = sys.modules.get("torch")
    torch_folder = str(Path(torch.__file__).parent) + os.sep if torch and torch.__file__ else None
    if torch_folder and filename.startswith(torch_folder):
        return False
    if filename.startswith(packages):
        return True
    return not filename.startswith((paths["stdlib"], paths["platstdlib"], "<"))


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
    phase_name = report.get("phase")
    during = f" during {phase_name}" if phase_name else ""
    inside = report.get("inside")
    deeper = f" (inside {inside})" if inside and not inside.startswith(report["where"]) else ""
    return (f"hang doctor: rank {report['rank']} ({report['host']}, pid {report['pid']}) has made "
            f"no progress for {report['waited_s']} s{during}, waiting {what} at "
            f"{report['where']}: {report['code']}{deeper}\n" + "".join(report["stack"]))


def summarize(reports: dict[int, dict[str, Any]], world_size: int) -> str:
    lines = [f"hang doctor: who waits where ({len(reports)} of {world_size} ranks reported)"]
    for rank in range(world_size):
        r = reports.get(rank)
        if r is None:
            lines.append(f"  rank {rank}: no report (dead, or still making progress)")
            continue
        what = r["collective"] or "no collective"
        during = f" during {r['phase']}" if r.get("phase") else ""
        inside = r.get("inside")
        deeper = f" (inside {inside})" if inside and not inside.startswith(r["where"]) else ""
        lines.append(f"  rank {rank} {r['host']} pid {r['pid']}: {what}{during} at "
                     f"{r['where']}{deeper}")
    outside = [r for r in reports.values() if r["collective"] is None]
    if outside and len(outside) < len(reports):
        lines.append("  ranks outside a collective keep the others waiting: look at "
                     + ", ".join(f"rank {r['rank']} ({r['where']})" for r in outside))
    return "\n".join(lines)
