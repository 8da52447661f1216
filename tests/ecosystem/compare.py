"""Compares two junit-xml results of one test slice: real Lightning's and fulmen's.

    python tests/ecosystem/compare.py LIGHTNING.xml FULMEN.xml

Prints the pass counts, then every test that passes on Lightning and not under fulmen, grouped by
the first ``E   ...`` line of its failure (one group per distinct cause). Where pytest stopped
before writing FULMEN.xml, or reported no test (a conftest that did not import), FULMEN.log
beside it gives the cause.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from libraries import outcomes


def _first_error(log: Path) -> str:
    text = log.read_text() if log.exists() else ""
    return next((ln[4:].strip() for ln in text.splitlines() if ln.startswith("E   ")),
                "no junit xml written (pytest stopped before running a test)")


def cause(why: str) -> str:
    """A failure line with addresses and temp paths blurred, so one cause is one group."""
    return re.sub(r"/tmp/\S+", "/tmp/?", re.sub(r"0x[0-9a-f]+", "0x?", why))[:400]


def main(lightning_xml: str, fulmen_xml: str) -> None:
    lightning = outcomes(Path(lightning_xml))
    passing = [k for k, (state, _) in lightning.items() if state == "passed"]
    report = Path(fulmen_xml)
    if report.exists():
        fulmen = outcomes(report)
    else:
        first = _first_error(report.with_suffix(".log"))
        fulmen = {k: ("failed", first) for k in lightning}
    ok = [k for k in passing if fulmen.get(k, ("missing", ""))[0] == "passed"]
    print(f"Lightning: {len(passing)} passed of {len(lightning)}; fulmen: {len(ok)} of those pass")
    groups: dict[str, list[str]] = defaultdict(list)
    unreported = ("missing", _first_error(report.with_suffix(".log")))  # a conftest that failed
    for k in passing:
        module = k.partition("::")[0]
        state, why = fulmen.get(k) or fulmen.get(module) or unreported
        if state != "passed":
            groups[cause(why) or state].append(k)
    for why, ids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(ids)}] {why}")
        for k in ids[:8]:
            print(f"    {k}")
        if len(ids) > 8:
            print(f"    ... {len(ids) - 8} more")


if __name__ == "__main__":
    main(*sys.argv[1:3])
