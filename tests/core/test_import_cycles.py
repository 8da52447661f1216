"""No import cycles in the kernel: the import graph of ``fulmen`` (every ``import`` outside
``if TYPE_CHECKING:``) has no cycle at module level, and none at all — function-level imports
included — through ``fulmen.module``, ``fulmen.trainer`` or ``fulmen.api``.

Two lazy cycles elsewhere are deliberate: ``fulmen.kernel.manager`` builds its ``Catalog`` on
first use (listing plugins imports no catalog code), and ``fulmen.cli`` imports
``fulmen.run_cli`` only for the commands that train. ``from package import submodule`` counts
as a dependency on the submodule, as Python's import system and pylint's ``cyclic-import`` see
it.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "core" / "src"
CORE = ("fulmen.module", "fulmen.trainer", "fulmen.api")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


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
        if target.startswith("fulmen") and target != name:
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


def test_no_module_level_import_cycle() -> None:
    graph = {name: imports(path, name, lazy=False) for name, path in MODULES.items()}
    assert not cycles(graph), cycles(graph)


def test_no_cycle_at_all_through_module_trainer_and_api() -> None:
    graph = {name: imports(path, name, lazy=True) for name, path in MODULES.items()}
    through = [c for c in cycles(graph) if any(m.startswith(CORE) for m in c)]
    assert not through, through


def test_the_walk_sees_a_lazy_cycle() -> None:
    """The checker is not vacuous: fulmen.kernel.manager imports fulmen.kernel.catalog inside
    a function, and fulmen.kernel.catalog imports fulmen.kernel.manager at the top."""
    graph = {name: imports(path, name, lazy=True) for name, path in MODULES.items()}
    assert ["fulmen.kernel.catalog", "fulmen.kernel.manager"] in cycles(graph)
    manager = "fulmen.kernel.manager"
    assert "fulmen.kernel.catalog" not in imports(MODULES[manager], manager, False)
