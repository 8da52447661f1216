"""Generated documentation: the hook reference, the support table, the registered names and the
CLI reference, built from the installed code when the site is built, so they never go stale.

As an mkdocs hook (``hooks: [tools/docs_gen.py]`` in mkdocs.yml), ``on_page_markdown`` replaces
each marker line ``<!-- fulmen:generate NAME -->`` in a page with the output of ``NAME``.
Run directly to print one: ``.venv/bin/python tools/docs_gen.py support-table``. The hook
reference is also kept filled in in the repository (between its markers);
``.venv/bin/python tools/docs_gen.py --write`` regenerates it after a hook changes, and
``tests/docs`` fails while it is stale.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import sys
import textwrap
from collections.abc import Callable
from typing import Any

MARKER = re.compile(r"^<!-- fulmen:generate ([a-z-]+) -->$"
                    r"(?:\n(?:.*\n)*?<!-- fulmen:end \1 -->$)?", re.M)
#: generated blocks kept in the repository too (``--write``), so a reader of the sources finds
#: them filled in; a test compares them with what the code generates now
COMMITTED = {"hook-reference": "docs/reference/hooks.md"}


# --------------------------------------------------------------------------- hook reference


def _inline(text: str) -> str:
    """reST inline markup of the hook docstrings → Markdown."""
    text = re.sub(r":(?:func|class|meth|mod|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _hook_doc(name: str, func: Callable[..., Any], first_result: bool) -> str:
    doc = inspect.getdoc(func) or ""
    body, _, example = doc.partition("Example::")
    params: list[str] = []
    returns = ""
    prose: list[str] = []
    field = re.compile(r"^:(param (\w+)|return):\s*(.*)$")
    current: list[str] | None = None
    for line in body.splitlines():
        match = field.match(line)
        if match:
            text = match.group(3)
            if match.group(2):
                params.append(f"`{match.group(2)}`: {text}")
                current = params
            else:
                returns = text
                current = None
        elif current is not None and line.startswith(" ") and current:
            current[-1] += " " + line.strip()
        elif current is None and returns and line.startswith(" "):
            returns += " " + line.strip()
        else:
            current = None
            prose.append(line)
    signature = str(inspect.signature(func)).split(" -> ")[0]
    kind = "first result" if first_result else "collect"
    out = [f"## `{name}`", "", f"`{name}{signature}` — **{kind}** hook", "",
           _inline("\n".join(prose).strip()), ""]
    if params:
        out += ["**Parameters**", ""] + [f"- {_inline(p)}" for p in params] + [""]
    if returns:
        out += [f"**Returns** {_inline(returns)}", ""]
    if example.strip():
        out += ["**Example**", "", "```python", textwrap.dedent(example).strip("\n"), "```", ""]
    return "\n".join(out)


def hook_reference() -> str:
    """Every hook of ``fulmen.kernel.hookspecs``, in source order, from its docstring."""
    from fulmen.kernel import hookspecs
    hooks = [(n, f) for n, f in vars(hookspecs).items()
             if n.startswith("fulmen_") and callable(f)]
    hooks.sort(key=lambda item: inspect.getsourcelines(item[1])[1])
    rows = ["| hook | kind | summary |", "|---|---|---|"]
    sections = []
    for name, func in hooks:
        opts = getattr(func, f"{hookspecs.PROJECT}_spec", {}) or {}
        first = bool(opts.get("firstresult"))
        summary = _inline((inspect.getdoc(func) or "").split("\n\n")[0].replace("\n", " "))
        rows.append(f"| [`{name}`](#{name}) | {'first result' if first else 'collect'} | "
                    f"{summary} |")
        sections.append(_hook_doc(name, func, first))
    return "\n".join(rows) + "\n\n" + "\n".join(sections)


# --------------------------------------------------------------------------- support table


def _fits(allowed: tuple[str, ...], names: tuple[str, ...]) -> bool:
    return not allowed or bool(set(allowed) & set(names))


def support_matrix() -> dict[str, dict[str, list[str]]]:
    """strategy → accelerator → precisions, as the installed plugins' records declare them.

    The same comparison composition makes (``fulmen.kernel.compose``): a strategy's
    ``accelerators`` and ``precisions``, a precision's ``accelerators`` and ``strategies``; an
    empty list means any.
    """
    import fulmen

    catalog = fulmen.get_plugin_manager().catalog()
    accelerators = catalog.entries("accelerator")
    precisions = catalog.entries("precision")
    matrix: dict[str, dict[str, list[str]]] = {}
    for strategy in catalog.entries("strategy"):
        s = strategy.record
        row: dict[str, list[str]] = {}
        for accelerator in accelerators:
            a = accelerator.record
            if not _fits(s.accelerators, a.names):
                row[a.name] = []
                continue
            row[a.name] = [p.name for p in precisions
                           if _fits(s.precisions, p.record.names)
                           and _fits(p.record.accelerators, a.names)
                           and _fits(p.record.strategies, s.names)]
        matrix[s.name] = row
    return matrix


def support_table() -> str:
    """The support matrix as Markdown, plus the known strategies not installed here."""
    import fulmen
    from fulmen.kernel.known_plugins import KNOWN

    catalog = fulmen.get_plugin_manager().catalog()
    all_precisions = catalog.names("precision")
    accelerators = catalog.names("accelerator")
    matrix = support_matrix()
    head = "| strategy | plugin | " + " | ".join(f"`{a}`" for a in accelerators) + " |"
    out = [head, "|" + "---|" * (len(accelerators) + 2)]
    for entry in catalog.entries("strategy"):
        cells = []
        for acc in accelerators:
            precisions = matrix[entry.name][acc]
            if not precisions:
                cells.append("—")
            elif precisions == all_precisions:
                cells.append("all")
            else:
                missing = [p for p in all_precisions if p not in precisions]
                cells.append("all but " + ", ".join(f"`{p}`" for p in missing)
                             if len(missing) <= 2 else ", ".join(f"`{p}`" for p in precisions))
        plugin = entry.plugin
        origin = plugin.distribution or "runtime"
        out.append(f"| `{entry.name}` | `{plugin.name}` ({origin}) | " + " | ".join(cells) + " |")
    out += ["", "All precisions installed here: " + ", ".join(f"`{p}`" for p in all_precisions)
            + "."]
    absent: dict[str, list[str]] = {}
    for name, provider in KNOWN["strategy"].items():
        if catalog.find("strategy", name) is None:
            absent.setdefault(f"{provider.distribution} (`{provider.install}`)", []).append(name)
    if absent:
        out += ["", "Known strategies whose plugin is not installed where this page was built:", ""]
        out += [f"- {dist}: " + ", ".join(f"`{n}`" for n in names)
                for dist, names in sorted(absent.items())]
    return "\n".join(out)


# --------------------------------------------------------------------------- names and CLI


def names_table() -> str:
    """Every registered name per kind with its aliases, plugin and description."""
    import fulmen
    from fulmen.kernel.catalog import KINDS, PLURAL

    catalog = fulmen.get_plugin_manager().catalog()
    out = []
    for kind in KINDS:
        out += [f"### {PLURAL[kind].capitalize()}", "", "| name | also accepted | plugin | "
                "description |", "|---|---|---|---|"]
        for entry in catalog.entries(kind):
            r = entry.record
            aka = [f"`{a}`" for a in r.aliases] + [f"`{a}` (deprecated)"
                                                    for a in r.deprecated_aliases]
            out.append(f"| `{r.name}` | {', '.join(aka)} | `{entry.plugin.name}` | "
                       f"{r.description} |")
        out.append("")
    return "\n".join(out)


def _help(argv: list[str]) -> str:
    from fulmen.cli import main

    buffer = io.StringIO()
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; keep the page stable
    try:
        with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
            main(argv)
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return buffer.getvalue().rstrip()


def cli_reference() -> str:
    """``--help`` of ``fulmen`` and ``fulmen plugins`` as printed by the installed CLI."""
    out = []
    for argv in (["--help"], ["plugins", "--help"]):
        out += [f"### `fulmen {' '.join(argv)}`", "", "```text", _help(argv), "```", ""]
    return "\n".join(out)


def fit_help() -> str:
    """``fulmen fit --help``: every Trainer flag as the config parser knows it."""
    return "```text\n" + _help(["fit", "--help"]) + "\n```"


GENERATORS: dict[str, Callable[[], str]] = {
    "hook-reference": hook_reference,
    "support-table": support_table,
    "names-table": names_table,
    "cli-reference": cli_reference,
    "fit-help": fit_help,
}


def expand(markdown: str, keep_markers: bool = False) -> str:
    """Replace every marker line (or marked block, ``<!-- fulmen:generate NAME -->`` ...
    ``<!-- fulmen:end NAME -->``) with its generated Markdown (an unknown name is an error).
    ``keep_markers``: keep the block's markers around it (what ``--write`` stores)."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"unknown generator {name!r} in a docs marker; known: "
                           f"{sorted(GENERATORS)}")
        text = GENERATORS[name]()
        if keep_markers:
            return f"<!-- fulmen:generate {name} -->\n{text}\n<!-- fulmen:end {name} -->"
        return text

    return MARKER.sub(replace, markdown)


def write(root: str = ".") -> list[str]:
    """Regenerate the committed blocks (:data:`COMMITTED`) in place; returns the pages that
    changed."""
    changed = []
    for page in sorted(set(COMMITTED.values())):
        path = os.path.join(root, page)
        with open(path, encoding="utf-8") as handle:
            before = handle.read()
        after = expand(before, keep_markers=True)
        if after != before:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(after)
            changed.append(page)
    return changed


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs hook: expand the markers of each page."""
    return expand(markdown)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        for page in write(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))):
            print(f"updated {page}")
    else:
        print(GENERATORS[sys.argv[1]]())
