"""One file's migration: the old and new text, and what could not be migrated."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Result:
    """One file's migration: the new source and what could not be migrated."""

    path: Path
    old: str
    new: str
    notes: list[tuple[int, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.old.splitlines(keepends=True),
                                            self.new.splitlines(keepends=True),
                                            f"a/{self.path}", f"b/{self.path}"))
