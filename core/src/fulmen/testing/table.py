"""``fulmen plugins --check``: run the kit and print the verdicts as a table."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Sequence

from fulmen.testing.clauses import FAIL, SKIP, Result
from fulmen.testing.runner import Report, Runner, select_targets

MARK = {"pass": "pass", "fail": "FAIL", "skip": "skip"}


def main(names: Sequence[str], as_json: bool = False, timeout: float = 120.0,
         exhaustive: bool = False) -> int:
    """Check ``names`` (every installed plugin when empty); 0 when no clause fails."""
    targets = select_targets(names)
    print(f"fulmen: checking {len(targets)} names against the plugin contracts "
          "(fulmen.testing)...", file=sys.stderr, flush=True)
    report = Runner(timeout=timeout, exhaustive=exhaustive,
                    progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True)
                    ).run(targets)
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(render(report))
    return 0 if report.ok else 1


def render(report: Report, width: int = 60) -> str:
    """The table (one row per name and clause), then every failure with its fix. A skip's (or
    a plugin's) reason longer than ``width`` shows its start in the table and is printed whole
    under it as a numbered note: the cause is never cut off."""
    rows = [("plugin", "distribution", "name", "clause", "result")]
    notes: list[str] = []
    for r in report.results:
        shown = r.status == SKIP or (r.kind == "plugin" and r.status != FAIL)
        note = ""
        if shown and r.detail:
            text = " ".join(r.detail.split())
            if len(text) <= width:
                note = f" ({text})"
            else:  # its start here, the whole under the table
                if r.detail not in notes:
                    notes.append(r.detail)
                note = f" ({text[:width - 3]}... see note {notes.index(r.detail) + 1})"
        rows.append((r.plugin, r.distribution, f"{r.kind} {r.name}", r.clause,
                     MARK[r.status] + note))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4]
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ------")
    if notes:
        lines.append("\nNotes:")
        lines += [wrap(f"{n}. {text}", "   ") for n, text in enumerate(notes, 1)]
    failures = report.failures
    if failures:
        lines.append(f"\n{len(failures)} clause(s) failed:")
        for r in failures:
            lines.append(explain(r))
    counts = {s: sum(r.status == s for r in report.results) for s in ("pass", FAIL, SKIP)}
    names = len({(r.kind, r.name) for r in report.results})
    lines.append(f"\n{names} names: {counts['pass']} clauses passed, {counts[FAIL]} failed, "
                 f"{counts[SKIP]} skipped, in {report.seconds:.1f} s{load()}")
    return "\n".join(lines)


def wrap(text: str, indent: str, columns: int = 100) -> str:
    """``text`` wrapped at ``columns`` (its own line breaks kept), later lines indented."""
    out: list[str] = []
    for n, paragraph in enumerate(text.splitlines() or [""]):
        out += textwrap.wrap(paragraph, columns, initial_indent="" if n == 0 else indent,
                             subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False) or [""]
    return "\n".join(out)


def load() -> str:
    """The machine's load next to the elapsed time: on shared machines it explains the time."""
    try:
        one_minute = os.getloadavg()[0]
    except OSError:
        return ""
    return f" (load average {one_minute:.1f} on {os.cpu_count()} CPUs)"


def explain(r: Result) -> str:
    """One failure: the name, plugin, distribution, clause, ranks and line, what was seen,
    the hint computed from it, and what the clause asks for."""
    ranks = f" on rank(s) {', '.join(map(str, r.ranks))}" if r.ranks else ""
    where = f" at {r.where}" if r.where else ""
    text = (f"- {r.kind} {r.name!r} (plugin {r.plugin!r}, {r.distribution}) breaks "
            f"{r.clause}{ranks}{where}: {r.detail}")
    return text.replace("\n", "\n    ") + f"\n    hint: {r.hint or r.fix}"
