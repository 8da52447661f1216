"""Benchmark: plugin discovery with 200 installed fake plugin distributions, and `import fulmen`.

Goals (issue: the kernel): discovery + catalog build <= 100 ms with 200 plugins, importing none of
their target classes; `import fulmen` adds <= 50 ms to a bare interpreter. Prints the figures;
asserts only that no target was imported.

    .venv/bin/python tests/benchmarks/discovery.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_PLUGINS = 200
PLUGIN = """from fulmen import StrategySpec, hookimpl


@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="bench_{i}", target="benchplug_{i}_impl:Strategy",
                       description="benchmark plugin {i}")
"""

MEASURE = """
import json, sys, time
t0 = time.perf_counter()
import fulmen
manager = fulmen.get_plugin_manager()
catalog = manager.catalog()
elapsed = time.perf_counter() - t0
imported = [m for m in sys.modules if m.startswith("benchplug_") and m.endswith("_impl")]
print(json.dumps({"seconds": elapsed, "plugins": len(manager.plugins),
                  "strategies": len(catalog.names("strategy")), "imported_targets": imported}))
"""


def make_site(root: Path) -> None:
    for i in range(N_PLUGINS):
        info = root / f"fulmen_benchplug_{i}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fulmen-benchplug-{i}\n"
                                       "Version: 1.0\n")
        (info / "entry_points.txt").write_text(f"[fulmen.plugins]\nbench_{i} = benchplug_{i}\n")
        (root / f"benchplug_{i}.py").write_text(PLUGIN.format(i=i))
        (root / f"benchplug_{i}_impl.py").write_text("raise RuntimeError('never imported')\n")


def run(code: str, site: str | None = None) -> float:
    # Installed packages carry bytecode (pip compiles it), so let the warm-up run write it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if site:
        env["PYTHONPATH"] = site
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env)
    wall = time.perf_counter() - t0
    if out.stdout.strip().startswith("{"):
        return json.loads(out.stdout)  # type: ignore[return-value]
    return wall


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        make_site(site)
        run(MEASURE, str(site))  # warm the file-system cache and bytecode
        results = [run(MEASURE, str(site)) for _ in range(7)]
    seconds = statistics.median(r["seconds"] for r in results)  # type: ignore[index]
    last = results[-1]
    assert last["imported_targets"] == [], last["imported_targets"]  # type: ignore[index]
    print(f"discovery + catalog, {last['plugins']} plugins ({last['strategies']} strategies): "  # type: ignore[index]
          f"{seconds * 1000:.1f} ms median of 7 (goal <= 100 ms); targets imported: 0")

    bare = [run("pass") for _ in range(15)]
    with_fulmen = [run("import fulmen") for _ in range(15)]
    added = (min(with_fulmen) - min(bare)) * 1000
    print(f"import fulmen: {min(with_fulmen) * 1000:.1f} ms vs bare interpreter "
          f"{min(bare) * 1000:.1f} ms -> adds {added:.1f} ms (goal <= 50 ms)")


if __name__ == "__main__":
    main()
