"""Where checks write their verdicts: one JSON object a line, appended and flushed at once, so
a run that is killed on its timeout still tells which clause it was in."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fulmen.testing.clauses import FAIL, PASS, SKIP


class Skip(Exception):
    """Raised inside a check: the clause cannot run here (the reason is the message)."""


class Recorder:
    """Appends ``{"event": "start" | "result", ...}`` lines to ``path``."""

    def __init__(self, path: Path | str, kind: str, name: str) -> None:
        self.path, self.kind, self.name = Path(path), kind, name
        self.last = ""  # the detail of the last verdict

    def write(self, **fields: Any) -> None:
        line = json.dumps({"kind": self.kind, "name": self.name, **fields}, default=str)
        with open(self.path, "a") as handle:
            handle.write(line + "\n")
            handle.flush()

    def result(self, clause: str, status: str, detail: str = "") -> None:
        self.last = detail
        self.write(event="result", clause=clause, status=status, detail=detail)

    def clause(self, clause: str, check: Callable[[], Any]) -> str:
        """Run ``check()`` and return the status: an ``AssertionError`` or any exception fails
        the clause, ``Skip`` skips it; a returned string is kept as the detail of a pass."""
        self.write(event="start", clause=clause)
        try:
            detail = check()
        except Skip as exc:
            self.result(clause, SKIP, str(exc))
            return SKIP
        except AssertionError as exc:
            self.result(clause, FAIL, str(exc) or describe(exc))
            return FAIL
        except BaseException as exc:  # a plugin's error is a verdict, not a crash of the kit
            self.result(clause, FAIL, describe(exc))
            if isinstance(exc, KeyboardInterrupt):
                raise
            return FAIL
        self.result(clause, PASS, detail if isinstance(detail, str) else "")
        return PASS


def describe(exc: BaseException) -> str:
    """``Type: message (at file:line)`` of the innermost frame outside the kit."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "/fulmen/testing/" not in f.filename.replace("\\", "/")]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}{where}"


def read(path: Path) -> list[dict[str, Any]]:
    """Every line a recorder wrote (a half-written last line is ignored)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


__all__ = ["FAIL", "PASS", "SKIP", "Recorder", "Skip", "read"]
