"""Every Lightning name a library's source uses, and whether this interpreter resolves it.

Reads the library's ``.py`` files (AST, no import), collects ``from lightning... import X``,
``import pytorch_lightning.x.y`` and attribute chains on an alias (``pl.callbacks.EarlyStopping``),
then imports each one. Run it twice, on real Lightning and under ``fulmen run``; the names that
resolve on Lightning and not under fulmen are what fulmen's import hook is missing::

    python tests/ecosystem/lightning_names.py DIR... > real.json
    fulmen run tests/ecosystem/lightning_names.py --like real.json DIR... > fulmen.json

``--like`` makes the fulmen run import the same module part that real Lightning imported (under
``fulmen run`` a lenient Lightning package answers ``import`` of any dotted name below it).
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOTS = ("lightning", "pytorch_lightning", "lightning_fabric")


def _is_lightning(name: str) -> bool:
    return name.partition(".")[0] in ROOTS


def _chain(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def uses(path: Path) -> Iterator[str]:
    """Dotted Lightning names ``path`` refers to (module or module.attribute)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and _is_lightning(node.module):
            for alias in node.names:
                if alias.name != "*":
                    yield f"{node.module}.{alias.name}"
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_lightning(alias.name):
                    yield alias.name
                    aliases[alias.asname or alias.name.partition(".")[0]] = (
                        alias.name if alias.asname else alias.name.partition(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = _chain(node)
            if parts and parts[0] in aliases and len(parts) > 1:
                yield ".".join([aliases[parts[0]], *parts[1:]])


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"


def resolve(dotted: str, module_name: str | None = None) -> tuple[str | None, str | None]:
    """(the module part of ``dotted``, None when it resolves else the error's first line).

    Without ``module_name`` the longest importable prefix is the module (right on real
    Lightning); with it (taken from the real Lightning run) that prefix is imported and the rest
    read as attributes, as ``from module import name`` does.
    """
    parts = dotted.split(".")
    cuts = range(len(parts), 0, -1)
    if module_name is not None:
        cuts = range(len(module_name.split(".")), len(module_name.split(".")) - 1, -1)
    for cut in cuts:
        name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(name)
        except ImportError as exc:  # fulmen's LightningNameError is an ImportError too
            if exc.name == name and cut > 1 and module_name is None:
                continue
            return name, _error(exc)
        except Exception as exc:
            return name, _error(exc)
        for attr in parts[cut:]:
            try:
                obj = getattr(obj, attr)
            except Exception as exc:
                return name, _error(exc)
        return name, None
    return None, "unresolvable"


def main(args: list[str]) -> None:
    like: dict[str, dict[str, str | None]] = {}
    if args[:1] == ["--like"]:
        like = json.loads(Path(args[1]).read_text())
        args = args[2:]
    found: dict[str, set[str]] = {}
    for d in args:
        for path in sorted(Path(d).rglob("*.py")):
            for name in uses(path):
                found.setdefault(name, set()).add(str(path))
    report = {}
    for name, files in sorted(found.items()):
        module, error = resolve(name, like.get(name, {}).get("module"))
        report[name] = {"module": module, "error": error, "files": sorted(files)[:3]}
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
