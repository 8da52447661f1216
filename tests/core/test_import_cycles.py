"""No import cycles: the import graph of every package in the repository (``fulmen`` and
each plugin distribution: accelerators, strategies, precision, environments, plugins/*) has no
cycle, counting every import: module-level, function-level (lazy) and ``if TYPE_CHECKING:``
imports (annotations) alike, as an import-graph tool reading the source sees them. A part that
needs what imports it is typed against a protocol of what it uses (``fulmen.api.trainer_view``,
``fulmen.trainer.host``...). ``from package import submodule`` counts as a dependency on the
submodule, as Python's import system and pylint's ``cyclic-import`` see it.
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
    """The fulmen modules ``path`` imports: at module level (``if TYPE_CHECKING:`` blocks
    included), or anywhere when ``lazy``."""
    tree = ast.parse(path.read_text())
    nodes = ast.walk(tree) if lazy else _top_level(tree.body)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes:
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


def test_the_walk_sees_lazy_and_type_checking_cycles(tmp_path: Path) -> None:
    """The checker is not vacuous: a function-level import closing a circle is a cycle, and so
    is an import under ``if TYPE_CHECKING:``."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    import d\nimport b\n")
    (tmp_path / "d.py").write_text("import c\n")
    names = ("a", "b", "c", "d")
    MODULES.update({n: tmp_path / f"{n}.py" for n in names})
    try:
        graph = {n: imports(MODULES[n], n, lazy=True) for n in names}
        assert graph == {"a": {"b"}, "b": {"a"}, "c": {"b", "d"}, "d": {"c"}}
        assert sorted(cycles(graph)) == [["a", "b"], ["c", "d"]]
        assert imports(MODULES["b"], "b", lazy=False) == set()
        assert imports(MODULES["c"], "c", lazy=False) == {"b", "d"}
    finally:
        for n in names:
            del MODULES[n]
