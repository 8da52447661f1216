"""No import cycles: the import graph of every package in the repository (``fulmen`` and
each plugin distribution: accelerators, strategies, precision, environments, plugins/*) has no
cycle, function-level imports included; only ``if TYPE_CHECKING:`` imports (annotations) are
left out. ``from package import submodule`` counts as a dependency on the submodule, as Python's
import system and pylint's ``cyclic-import`` see it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / d / "src" for d in ("core", "accelerators", "strategies", "precision",
                                      "environments")] + sorted(ROOT.glob("plugins/*/src"))


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(src, p): p for src in SOURCES for p in src.rglob("*.py")}


def imports(path: Path, name: str, lazy: bool) -> set[str]:
    """The fulmen modules ``path`` imports (at module level, or anywhere when ``lazy``)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    nodes = ast.walk(tree) if lazy else _top_level(tree.body)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes:
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    out = set()
    for target in found:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def _top_level(body: list[ast.stmt]) -> list[ast.AST]:
    out: list[ast.AST] = []
    for node in body:
        if isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body) + _top_level(node.orelse) + _top_level(node.finalbody)
            for handler in node.handlers:
                out += _top_level(handler.body)
        else:
            out.append(node)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_packages_are_all_there() -> None:
    for package in ("fulmen", "fulmen.cli", "fulmen_strategies", "fulmen_deepspeed",
                    "fulmen_fairscale", "fulmen_accelerators"):
        assert package in MODULES, package


def test_no_import_cycle_at_all() -> None:
    graph = {name: imports(path, name, lazy=True) for name, path in MODULES.items()}
    assert not cycles(graph), cycles(graph)


def test_the_walk_sees_a_lazy_cycle_and_skips_type_checking(tmp_path: Path) -> None:
    """The checker is not vacuous: a function-level import closing a circle is a cycle; an
    import under ``if TYPE_CHECKING:`` is not an edge."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    import a\nimport b\n")
    MODULES.update({"a": tmp_path / "a.py", "b": tmp_path / "b.py", "c": tmp_path / "c.py"})
    try:
        graph = {n: imports(MODULES[n], n, lazy=True) for n in ("a", "b", "c")}
        assert graph == {"a": {"b"}, "b": {"a"}, "c": {"b"}}
        assert cycles(graph) == [["a", "b"]]
        assert imports(MODULES["b"], "b", lazy=False) == set()
    finally:
        for n in ("a", "b", "c"):
            del MODULES[n]
