"""Where checks write their verdicts: one JSON object a line, appended and flushed at once, so
a run that is killed on its timeout still tells which clause it was in."""

from __future__ import annotations

import inspect
import json
import os
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fulmen.testing.clauses import FAIL, PASS, SKIP


class Skip(Exception):
    """Raised inside a check: the clause cannot run here (the reason is the message)."""


class Broken(AssertionError):
    """Raised inside a check: the plugin breaks the clause. ``detail`` says what was observed,
    ``hint`` what to change given that observation, ``where`` the plugin's ``file:line``."""

    def __init__(self, detail: str, hint: str = "", where: str = "") -> None:
        super().__init__(detail)
        self.detail, self.hint, self.where = detail, hint, where


class Recorder:
    """Appends ``{"event": "start" | "result", ...}`` lines to ``path``. ``roots``: the folders
    of the plugin's own code (an error is located at the innermost frame there)."""

    def __init__(self, path: Path | str, kind: str, name: str,
                 roots: Sequence[str] = ()) -> None:
        self.path, self.kind, self.name = Path(path), kind, name
        self.roots = tuple(roots)
        self.last = ""  # the detail of the last verdict

    def write(self, **fields: Any) -> None:
        line = json.dumps({"kind": self.kind, "name": self.name, **fields}, default=str)
        with open(self.path, "a") as handle:
            handle.write(line + "\n")
            handle.flush()

    def result(self, clause: str, status: str, detail: str = "", hint: str = "",
               where: str = "") -> None:
        self.last = detail
        self.write(event="result", clause=clause, status=status, detail=detail, hint=hint,
                   where=where)

    def clause(self, clause: str, check: Callable[[], Any]) -> str:
        """Run ``check()`` and return the status: an ``AssertionError`` or any exception fails
        the clause, ``Skip`` skips it; a returned string is kept as the detail of a pass."""
        self.write(event="start", clause=clause)
        try:
            detail = check()
        except Skip as exc:
            self.result(clause, SKIP, str(exc))
            return SKIP
        except Broken as exc:
            self.result(clause, FAIL, exc.detail, exc.hint,
                        exc.where or locate(exc, self.roots))
            return FAIL
        except AssertionError as exc:
            self.result(clause, FAIL, str(exc) or describe(exc, self.roots),
                        where=locate(exc, self.roots))
            return FAIL
        except BaseException as exc:  # a plugin's error is a verdict, not a crash of the kit
            where = locate(exc, self.roots)
            self.result(clause, FAIL, describe(exc, self.roots),
                        hint=exception_hint(exc, where, self.roots), where=where)
            if isinstance(exc, KeyboardInterrupt):
                raise
            return FAIL
        self.result(clause, PASS, detail if isinstance(detail, str) else "")
        return PASS


def _inside(filename: str, roots: Sequence[str]) -> bool:
    path = os.path.abspath(filename)
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _is_kit(filename: str) -> bool:
    return "/fulmen/testing/" in filename.replace("\\", "/")


def frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``exc``'s traceback, and of its causes, innermost last."""
    out: list[traceback.FrameSummary] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out = list(traceback.extract_tb(current.__traceback__)) + out
        current = current.__cause__ or current.__context__
    return out


def locate(exc: BaseException, roots: Sequence[str] = ()) -> str:
    """``file:line`` of the innermost frame in the plugin's own code (``roots``), else the
    innermost frame outside the kit, else ""."""
    stack = frames(exc)
    own = [f for f in stack if roots and _inside(f.filename, roots)]
    if own:
        return f"{own[-1].filename}:{own[-1].lineno}"
    outside = [f for f in traceback.extract_tb(exc.__traceback__) if not _is_kit(f.filename)]
    return f"{outside[-1].filename}:{outside[-1].lineno}" if outside else ""


def describe(exc: BaseException, roots: Sequence[str] = ()) -> str:
    """``Type: message (at file:line)``, the whole message, located in the plugin's code where
    it has a frame."""
    where = locate(exc, roots)
    text = str(exc).strip()  # whole: a message's later lines often hold the cause
    return f"{type(exc).__name__}: {text}" + (f" (at {where})" if where else "")


def exception_hint(exc: BaseException, where: str, roots: Sequence[str] = ()) -> str:
    """What the error says about the plugin, from where it was raised."""
    if where and roots and _inside(where.rsplit(":", 1)[0], roots):
        return (f"the plugin's own code raised {type(exc).__name__} at {where}; the traceback "
                "above that line is the kit calling the contract member")
    own = any(_inside(f.filename, roots) for f in frames(exc)) if roots else False
    if own:
        return (f"{type(exc).__name__} was raised by a library the plugin called; the last "
                "line of the plugin's code on the way is the location given")
    if isinstance(exc, NotImplementedError | TypeError | AttributeError):
        return (f"{type(exc).__name__} before any of the plugin's code ran: a member the "
                "contract requires is missing, has another signature, or returns the wrong "
                "kind of object")
    return f"{type(exc).__name__} raised outside the plugin's code{f' at {where}' if where else ''}"


def defined_at(member: Any) -> str:
    """``file:line`` where a function (or a method) is defined, or ""."""
    try:
        function = inspect.unwrap(getattr(member, "__func__", member))
        return f"{inspect.getsourcefile(function)}:{inspect.getsourcelines(function)[1]}"
    except (TypeError, OSError):
        return ""


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


__all__ = ["FAIL", "PASS", "SKIP", "Broken", "Recorder", "Skip", "defined_at", "describe",
           "locate", "read"]
