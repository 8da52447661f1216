"""The one-process checks of a stop-notice plugin (clauses ``notice.*`` in
:mod:`fulmen.testing.clauses`): it describes itself, and it starts and stops cleanly without
announcing a stop that was not scheduled."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from fulmen.api.notice import Notice, PreemptionNotice
from fulmen.testing.record import Recorder

#: seconds ``start`` and ``stop`` may take each; the quiet time watched in between; the time
#: the threads ``start`` began get to end after ``stop``
PROMPT, QUIET, ENDING = 5.0, 0.5, 2.0


def check_notice(name: str, notice: PreemptionNotice, rec: Recorder, folder: Path
                 ) -> dict[str, Any]:
    """Record a verdict for every notice clause (``plugin.loads`` is done)."""

    def describes() -> str:
        text = notice.describe()
        assert isinstance(text, str) and text.strip() and "\n" not in text, (
            f"describe() returned {text!r}: return one non-empty line saying what it watches")
        assert isinstance(notice.per_node, bool), f"per_node is {notice.per_node!r}, not a bool"
        window = notice.window
        assert window is None or (isinstance(window, int | float) and window > 0), (
            f"window is {window!r}: seconds of notice (a positive number) or None")
        return text

    def watches() -> str:
        announced: list[Notice] = []
        before = set(threading.enumerate())
        started = time.monotonic()
        notice.start(announced.append)
        took = time.monotonic() - started
        try:
            assert took < PROMPT, (f"start() took {took:.1f} s on the training thread: watch "
                                   "from a thread of its own")
            time.sleep(QUIET)
        finally:
            stopping = time.monotonic()
            notice.stop()
            stopped = time.monotonic() - stopping
        assert stopped < PROMPT, f"stop() took {stopped:.1f} s"
        assert not announced, (f"announced {announced[0]!r} although no stop was scheduled "
                               "(announce only what the scheduler or the provider said)")
        deadline = time.monotonic() + ENDING
        while (left := [t for t in threading.enumerate() if t not in before and t.is_alive()]) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, (f"threads still run after stop(): {[t.name for t in left]}; join "
                          "what start() started")
        return f"start {took:.2f} s, stop {stopped:.2f} s"

    rec.clause("notice.describe", describes)
    rec.clause("notice.watch", watches)
    return {}
