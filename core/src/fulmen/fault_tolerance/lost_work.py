"""Lost work as a number: how much training a failure or a preemption cost.

Global rank zero keeps a heartbeat, ``fulmen_progress.json`` (in the Trainer's
``default_root_dir``; beside Lite's checkpoints), in a run that may be restarted (the Trainer:
``fulmen.trainer.preemption.restartable``; Lite: once its loop calls ``lite.should_stop()``)
from the moment it has a checkpoint to lose work against (it resumed from one, or saved one): the
step and wall-clock time, written by a daemon thread every :data:`HEARTBEAT_SECONDS` while the
step advances (nothing on the training thread), and once more when a preemption checkpoint is
committed, with the notice and how long the save took. Every checkpoint carries
``fault_tolerance`` (:func:`checkpoint_entry`): when it was saved, why, and the resumes that led
to it.

When a run resumes (``fit``; Lite's ``lite.load``), the previous attempt's heartbeat and the
checkpoint give the :class:`Resume` record: steps and seconds redone since that checkpoint
(bounded below by the heartbeat's period after a hard kill; exact after a notice), the time from
the failure (the last heartbeat) to the first step after the restart, and the preemption save
time against its window.
It is logged, sent to the loggers (``fault_tolerance/*``) and kept in later checkpoints, where
``fulmen checkpoint inspect`` shows it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from fulmen import storage

if TYPE_CHECKING:
    from fulmen.fault_tolerance.run import TrainingRun

KEY = "fault_tolerance"
FILE = "fulmen_progress.json"
#: seconds between two heartbeats while the step advances
HEARTBEAT_SECONDS = 0.25
#: seconds between two looks at the step while waiting for the first one after a resume
FIRST_STEP_POLL = 0.005


@dataclass
class Resume:
    """What one restart cost (all seconds are wall-clock)."""

    #: the checkpoint resumed from, and its step
    checkpoint: str
    checkpoint_step: int
    #: the last step the previous attempt was seen at (its heartbeat), and when
    failed_step: int | None
    failed_at: float | None
    #: optimizer steps and seconds of training redone: from the checkpoint to the failure
    steps_redone: int | None
    seconds_redone: float | None
    #: seconds from the failure to the first step after the restart (None until it ran)
    recovery_seconds: float | None = None
    #: when the first step after the restart finished (None until it did)
    first_step_at: float | None = None
    #: the preemption that stopped the previous attempt, if one did: its notice's source,
    #: the step it arrived at, the window and the seconds the checkpoint took to commit
    preemption: dict[str, Any] | None = None

    def metrics(self) -> dict[str, float]:
        """The numbers, for a logger (``fault_tolerance/<name>``)."""
        values = {"steps_redone": self.steps_redone, "seconds_redone": self.seconds_redone,
                  "recovery_seconds": self.recovery_seconds}
        if self.preemption is not None:
            values["preemption_save_seconds"] = self.preemption.get("save_seconds")
            values["preemption_window_seconds"] = self.preemption.get("window")
        return {f"{KEY}/{k}": float(v) for k, v in values.items() if v is not None}

    def describe(self) -> str:
        redone = ("an unknown number of steps (no heartbeat of the previous attempt)"
                  if self.steps_redone is None else
                  f"{self.steps_redone} step(s) ({self.seconds_redone or 0:.1f} s) redone")
        text = (f"resumed from {self.checkpoint} at step {self.checkpoint_step}: {redone} since "
                "that checkpoint")
        if self.recovery_seconds is not None:
            text += f"; {self.recovery_seconds:.1f} s from the failure to the first step"
        if self.preemption is not None:
            text += "; " + describe_preemption(self.preemption)
        return text


def describe_preemption(record: dict[str, Any]) -> str:
    """``notice at step 1234 (SIGTERM from signal), 30 s window, checkpoint committed in 4.1 s``."""
    window = record.get("window")
    text = (f"notice at step {record.get('step')} ({record.get('detail') or '?'} from "
            f"{record.get('source')}), "
            + (f"{window:.0f} s window" if window is not None else "window unknown"))
    if record.get("save_seconds") is not None:
        text += f", checkpoint committed in {record['save_seconds']:.1f} s"
        if window is not None and record["save_seconds"] > window:
            text += " (LATE: after the window closed)"
    return text


class Ledger:
    """One run's accounting (global rank zero writes; every rank keeps the records).

    ``root``: the folder (or URL) of the heartbeat; None until known (Lite: its first
    checkpoint's folder). ``restartable``: whether the run keeps a heartbeat at all."""

    def __init__(self, run: TrainingRun, root: str | None, restartable: bool) -> None:
        self.run = run
        self.writes = run.is_global_zero and restartable
        self.root = root
        self.resume: Resume | None = None
        #: the resumes that led to this run, oldest first (kept in every checkpoint)
        self.history: list[dict[str, Any]] = []
        self.preemption: dict[str, Any] | None = None
        #: whether nothing is left for :meth:`report` to send (a run that did not resume has
        #: nothing to report)
        self.reported = True
        #: whether the heartbeat is written: once there is a checkpoint to count lost work from
        self.armed = False
        self._stop = threading.Event()
        self._writing = threading.Lock()  # the heartbeat thread and a save both write
        self._thread: threading.Thread | None = None
        self._start_step = run.global_step

    @property
    def path(self) -> str | None:
        """The heartbeat file, once the root is known."""
        return storage.join(self.root, FILE) if self.root is not None else None

    def __getstate__(self) -> dict[str, Any]:
        """A pickled Trainer keeps the records, not the heartbeat thread."""
        state = dict(self.__dict__)
        for name in ("_stop", "_writing", "_thread"):
            state.pop(name)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stop, self._writing, self._thread = threading.Event(), threading.Lock(), None
        self._stop.set()

    # ------------------------------------------------------------------ start and stop

    def start(self, restored: dict[str, Any] | None, ckpt_path: str | None) -> None:
        """Read what the previous attempt left (on a resume), then start the heartbeat."""
        if restored is not None:
            self.restore(restored, ckpt_path)
        self.begin()

    def restore(self, restored: dict[str, Any], ckpt_path: Any) -> None:
        """A run resumed from ``restored`` (the checkpoint read from ``ckpt_path``): what the
        previous attempt lost (every rank calls this: rank zero's heartbeat is broadcast)."""
        found = restored.get(KEY)
        entry: dict[str, Any] = found if isinstance(found, dict) else {}
        self.history = list(entry.get("resumes", []))
        self.resume = self._resume(entry, restored, str(ckpt_path or "?"))
        self.reported = False
        self.armed = True

    def begin(self) -> None:
        """Training starts (or goes on) from here: start the heartbeat thread (once)."""
        self._stop.clear()
        self._start_step = self.run.global_step
        if self._thread is None and (self.writes or self.resume is not None):
            self._thread = threading.Thread(target=self._beat, daemon=True,
                                            name="fulmen-heartbeat")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
            self._thread = None
        if self.resume is not None and self.resume.first_step_at is None and \
                self.run.global_step != self._start_step:
            # the run stepped and ended between two polls of the heartbeat thread: the first
            # step ended no later than now
            self._first_step_done()

    def _resume(self, entry: dict[str, Any], restored: dict[str, Any], path: str) -> Resume:
        step = int(restored.get("global_step", entry.get("global_step", 0)))
        beat = read_heartbeat(self.root) if self.root is not None and \
            self.run.is_global_zero else None
        beat = self.run.strategy.broadcast(beat)
        saved_at = entry.get("saved_at")
        if not beat or beat.get("step") is None or beat.get("step", -1) < step:
            # no heartbeat, or one from an older run than this checkpoint: unknown
            return Resume(path, step, None, None, None, None)
        failed_step, failed_at = int(beat["step"]), float(beat["time"])
        redone = failed_step - step
        seconds = max(failed_at - float(saved_at), 0.0) if saved_at is not None and redone \
            else 0.0
        preemption = beat.get("preemption")
        if preemption is not None and preemption.get("checkpoint_step") != failed_step:
            preemption = None  # from an earlier attempt
        return Resume(path, step, failed_step, failed_at, redone, seconds,
                      preemption=preemption)

    # ------------------------------------------------------------------ heartbeat

    def _beat(self) -> None:
        written = None
        run = self.run
        while not self._stop.is_set():
            step = run.global_step
            if self.resume is not None and self.resume.first_step_at is None and \
                    step != self._start_step:
                self._first_step_done()
            if self.writes and self.armed and step != written and self.root is not None:
                self.write(step)
                written = step
            waiting = self.resume is not None and self.resume.first_step_at is None
            self._stop.wait(FIRST_STEP_POLL if waiting else HEARTBEAT_SECONDS)

    def _first_step_done(self) -> None:
        assert self.resume is not None
        now = time.time()
        if self.resume.failed_at is not None:
            self.resume.recovery_seconds = max(now - self.resume.failed_at, 0.0)
        self.resume.first_step_at = now
        self.history.append(asdict(self.resume))
        if self.run.is_global_zero:
            from fulmen.status import configure_logging

            configure_logging().warning("%s", self.resume.describe())

    def write(self, step: int, **extra: Any) -> None:
        """Write the heartbeat (atomically: a reader sees the old or the new one)."""
        path = self.path
        if path is None:
            return
        record = {"step": step, "time": time.time(), "epoch": self.run.current_epoch,
                  "pid": os.getpid(), **extra}
        if self.preemption is not None:
            record["preemption"] = self.preemption
        if storage.is_url(path):
            with storage.open_file(path, "w") as handle:
                handle.write(json.dumps(record))
            return
        local = storage.local(path)
        with self._writing:
            os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
            temporary = f"{local}.tmp-{os.getpid()}"
            with open(temporary, "w") as handle:
                handle.write(json.dumps(record))
            os.replace(temporary, local)

    # ------------------------------------------------------------------ what others read

    def report(self) -> None:
        """On the training thread, after the first step of a resumed run: send the record to
        the loggers (once)."""
        if self.reported or self.resume is None or self.resume.first_step_at is None:
            return
        self.reported = True
        if self.run.is_global_zero:
            for logger in self.run.loggers:
                logger.log_metrics(self.resume.metrics(), self.run.global_step)

    def preempted(self, record: dict[str, Any]) -> None:
        """A preemption checkpoint was committed: remember it and write the heartbeat now."""
        self.preemption = record
        if self.writes:
            self.stop()
            self.write(int(record["checkpoint_step"]))

    def checkpoint_entry(self, reason: str) -> dict[str, Any]:
        """What a checkpoint saved now records under ``fault_tolerance``."""
        if self.writes and reason == "periodic" and not self._stop.is_set():
            self.write(self.run.global_step)  # the heartbeat is never older than this
        self.armed = not self._stop.is_set()  # not after the fit ended
        entry: dict[str, Any] = {"saved_at": time.time(), "reason": reason,
                                 "global_step": self.run.global_step,
                                 "resumes": list(self.history)}
        if self.resume is not None and self.resume.first_step_at is None:
            entry["resumes"].append(asdict(self.resume))  # saved before the first step
        return entry


def read_heartbeat(root: str) -> dict[str, Any] | None:
    """The heartbeat a run left in ``root``, or None."""
    path = storage.join(root, FILE)
    try:
        if not storage.exists(path):
            return None
        with storage.open_file(path, "r") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
