"""``python -m fulmen.testing.worker JOB.json``: what the runner starts, one job a process.

A job is ``{"mode": "local", "targets": [[kind, name], ...], "folder": ...}`` (the one-process
checks of several names, one after the other) or ``{"mode": "processes", "name": ...,
"accelerator": ..., "folder": ...}`` (the two-process run of one strategy).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    folder = Path(job["folder"])
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    if job["mode"] == "list":  # the names of plugins this worker's environment enables
        from fulmen.kernel.manager import get_plugin_manager
        from fulmen.testing.record import Recorder
        from fulmen.testing.runner import KINDS

        catalog = get_plugin_manager().catalog()
        for kind in KINDS:
            for e in catalog.entries(kind):
                if e.plugin.name in job["plugins"]:
                    Recorder(folder / "results.jsonl", kind, e.name).write(
                        event="target", plugin=e.plugin.name,
                        distribution=e.plugin.distribution or "(runtime)",
                        group=e.record.target_path)
        return 0
    if job["mode"] == "processes":
        from fulmen.testing import distributed

        os.environ[distributed.FOLDER_VARIABLE] = str(folder)
        distributed.main(job["name"], job["accelerator"], str(folder))
        return 0
    from fulmen.testing.checks import check, layout
    from fulmen.testing.record import Recorder

    results = folder / "results.jsonl"
    layouts: dict[str, dict[str, object]] = {}
    first: dict[tuple[object, ...], str] = {}
    for kind, name in job["targets"]:
        if kind == "strategy":
            try:
                layouts[name] = found = layout(name)
            except Exception as exc:  # reported as the strategy.processes verdict
                layouts[name] = found = {"processes": 0, "error": f"composing devices=2 "
                                         f"raised {type(exc).__name__}: {exc}"}
            if "accelerator" in found and "group" in found:
                key = (found["group"], found.get("launcher"), found["processes"])
                first.setdefault(key, name)
    shares: dict[str, str | None] = {}
    for name, found in layouts.items():
        key = (found.get("group"), found.get("launcher"), found.get("processes"))
        shared = first.get(key) if job.get("share") else None
        shares[name] = shared if shared != name else None
        # Early, so that the runner starts the two-process runs while these checks go on.
        Recorder(results, "strategy", name).write(event="layout", shares=shares[name], **found)
    for kind, name in job["targets"]:
        environ, cwd = dict(os.environ), os.getcwd()
        rec = Recorder(results, kind, name)
        found = layouts.get(name, {})
        plan = check(kind, name, rec, folder / f"{kind}-{name}", shares.get(name))
        rec.write(event="plan", **found, **plan)
        os.environ.clear()  # a launcher may have marked this process as a launched rank
        os.environ.update(environ)
        os.chdir(cwd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
