"""The pages name only things that exist: strategy, accelerator, precision and environment names,
``fulmen_*`` hooks, and keyword flags of ``Trainer(...)`` / ``Lite(...)``.

Names are checked against the installed plugins' catalog, plus ``fulmen.kernel.known_plugins`` for
plugin packages that are not installed here (deepspeed, fairscale, horovod), plus names a page
registers itself (``name="..."`` in a record); ``your_*`` names are placeholders. A line that
says ``typo`` or ``on purpose`` is showing a mistake deliberately and is skipped.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fulmen
from fulmen.kernel import hookspecs
from fulmen.kernel.catalog import KINDS
from fulmen.kernel.known_plugins import KNOWN

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXEMPT = re.compile(r"typo|on purpose", re.I)
SELECTION = re.compile(r"\b(strategy|accelerator|precision)\s*=\s*(?:([\"'])([^\"'\n]*)\2|(\d+)\b)")
PLUGINS_ARG = re.compile(r"\bplugins\s*=\s*\[([^\]]*)\]")
HOOK_DEF = re.compile(r"\bdef (fulmen_\w+)|\b(fulmen_\w+)\("
                      r"|\b(fulmen_(?:detect|default|check)_\w+)")
CALL = re.compile(r"(?<![\w.])(?:fulmen\.|compat\.)?(Trainer|Lite)\(")
KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)")


def registered() -> dict[str, set[str]]:
    """Every name and alias per kind: installed plugins, then known plugin packages."""
    catalog = fulmen.get_plugin_manager().catalog()
    names = {kind: {n for e in catalog.entries(kind) for n in e.record.names} for kind in KINDS}
    for kind in KINDS:
        names[kind] |= set(KNOWN.get(kind, {}))
    return names


def hook_names() -> set[str]:
    return {n for n in dir(hookspecs) if n.startswith("fulmen_")}


def flags(owner: str) -> set[str]:
    cls = fulmen.Trainer if owner == "Trainer" else fulmen.Lite
    return {n for n, p in inspect.signature(cls.__init__).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n != "self"}


def call_arguments(text: str, start: int) -> tuple[list[str], int]:
    """Top-level comma-separated arguments of the call whose ``(`` is at ``start - 1``."""
    depth, parts, current, i = 1, [], "", start
    while i < len(text) and depth:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if depth == 1 and ch == ",":
            parts.append(current)
            current = ""
        elif depth:
            current += ch
        i += 1
    parts.append(current)
    return parts, i


def problems(text: str, names: dict[str, set[str]] | None = None) -> list[str]:
    """What a page names that does not exist (one message per finding)."""
    names = names or registered()
    local = set(re.findall(r"\bname\s*=\s*[\"']([a-z0-9][a-z0-9_\-]*)[\"']", text))
    hooks = hook_names()
    found: list[str] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if EXEMPT.search(line):
            continue
        for arg, _, quoted, number_value in SELECTION.findall(line):
            value = (quoted or number_value).strip().lower()
            if value.startswith("your_"):
                continue
            allowed = names[arg] | local | {"auto"}
            if arg == "accelerator":
                allowed |= names["strategy"]  # legacy: a strategy name given as accelerator
            if value not in allowed:
                found.append(f"line {number}: {arg}={value!r} is not a registered {arg} name")
        for items in PLUGINS_ARG.findall(line):
            for value in re.findall(r"[\"']([^\"']+)[\"']", items):
                if not value.startswith("your_") and value not in (
                        names["environment"] | names["precision"] | names["notice"] | local):
                    found.append(f"line {number}: plugins=[{value!r}] names no environment, "
                                 "precision or stop notice")
        for groups in HOOK_DEF.findall(line):
            hook = next(g for g in groups if g)
            if hook not in hooks and importlib.util.find_spec(hook) is None:
                found.append(f"line {number}: {hook} is not a hook in fulmen/kernel/hookspecs.py")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for match in CALL.finditer(text):
        number = next(i for i, o in enumerate(offsets) if o > match.start())
        if EXEMPT.search(lines[number - 1]):
            continue
        owner = match.group(1)
        known = flags(owner)
        arguments, _ = call_arguments(text, match.end())
        for argument in arguments:
            keyword = KEYWORD.match(argument)
            if keyword and keyword.group(1) not in known:
                found.append(f"line {number}: {owner}({keyword.group(1)}=...) is not a "
                             f"{owner} flag")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_names_exist(page: Path):
    found = problems(page.read_text())
    assert not found, f"{page.relative_to(ROOT)} names things that do not exist:\n  " + \
        "\n  ".join(found)


def test_checker_catches_what_does_not_exist():
    bad = '''
trainer = fulmen.Trainer(strategy="ddp_spwan", accelerator="tpu2", precision="bf17",
                         auto_select_gpus=True, devices=2)
Lite(precision=17, replace_sampler=True)
@hookimpl
def fulmen_detect_gpus(environ): ...
fulmen.Trainer(plugins=["slurmm"])
'''
    found = "\n".join(problems(bad))
    for name in ("'ddp_spwan'", "'tpu2'", "'bf17'", "auto_select_gpus", "'17'",
                 "replace_sampler", "fulmen_detect_gpus", "'slurmm'"):
        assert name in found, (name, found)
    assert "devices" not in found


def test_checker_accepts_real_and_local_names():
    good = '''
fulmen.Trainer(strategy="ddp_spawn", accelerator="gpu", precision=16, devices="1, 3",
               plugins=["slurm", "aws_spot"])
fulmen.Trainer(accelerator="ddp")  # legacy: a strategy name as accelerator
fulmen.Trainer(strategy="deepspeed_stage_3_offload")  # a known plugin package
StrategySpec(name="my_ddp", target="pkg.mod:Cls")
fulmen.Trainer(strategy="my_ddp")
def fulmen_default_strategy(accelerator, num_devices, num_nodes, interactive): ...
fulmen.Trainer(strategy="singel_device")  # a typo on purpose
'''
    assert problems(good) == []


@pytest.mark.timeout(120)
def test_site_builds_strictly(tmp_path: Path):
    """`mkdocs build --strict`: no broken link or anchor, every generator marker expands."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=110, env={**_environ(), "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    html = (tmp_path / "site" / "reference" / "hooks" / "index.html").read_text()
    assert all(h in html for h in hook_names())
    assert "fulmen:generate" not in (tmp_path / "site" / "distributed" / "index.html").read_text()
    print(f"mkdocs build --strict: {time.perf_counter() - start:.1f} s")


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_generated_support_table_follows_the_records():
    """The support table is computed from records: fsdp excludes 64-true, dp needs cuda."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs_gen
    finally:
        sys.path.remove(str(ROOT / "tools"))
    matrix = docs_gen.support_matrix()
    assert matrix["dp"]["cpu"] == [] and "32-true" in matrix["dp"]["cuda"]
    assert "64-true" not in matrix["fsdp"]["cpu"] and "bf16-mixed" in matrix["fsdp"]["cpu"]
    assert "| `fsdp` |" in docs_gen.support_table()
    expanded = docs_gen.expand("x\n<!-- fulmen:generate hook-reference -->\ny")
    assert "## `fulmen_default_strategy`" in expanded and "fulmen:generate" not in expanded
    with pytest.raises(KeyError, match="unknown generator"):
        docs_gen.expand("<!-- fulmen:generate nope -->")


def test_the_committed_hook_reference_is_filled_in_and_current():
    """docs/reference/hooks.md holds the generated reference between its markers (a reader of
    the repository sees it, not a placeholder), and it matches the hook specs of today."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs_gen
    finally:
        sys.path.remove(str(ROOT / "tools"))
    page = (ROOT / "docs" / "reference" / "hooks.md").read_text()
    assert "<!-- fulmen:end hook-reference -->" in page
    assert all(f"## `{name}`" in page for name in hook_names())
    assert docs_gen.expand(page, keep_markers=True) == page, (
        "docs/reference/hooks.md is stale: run .venv/bin/python tools/docs_gen.py --write")
