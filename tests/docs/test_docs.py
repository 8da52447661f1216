"""Every Python block in README.md and docs/ runs, and so does every hook-spec example."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fulmen
from fulmen.kernel import hookspecs

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_page_blocks_run(page: Path, tmp_path: Path):
    """The blocks of a page run in order, in one fresh interpreter, as a reader would run them."""
    script = "\n\n".join(f"# --- block {i}\n{code}" for i, code in enumerate(blocks(page), 1))
    path = tmp_path / "page.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=110, cwd=tmp_path)
    assert done.returncode == 0, f"{page.name} failed:\n{done.stdout}\n{done.stderr}"


def hook_examples() -> list[tuple[str, str]]:
    out = []
    for name in dir(hookspecs):
        if name.startswith("fulmen_"):
            doc = getattr(hookspecs, name).__doc__
            example = doc.split("Example::", 1)[1]
            out.append((name, textwrap.dedent(example)))
    return out


def test_every_hook_is_documented():
    names = [n for n, _ in hook_examples()]
    assert len(names) >= 8
    for name in names:
        doc = getattr(hookspecs, name).__doc__
        assert ":return:" in doc and "Example::" in doc, name


@pytest.mark.parametrize(("hook", "example"), hook_examples(), ids=[h for h, _ in hook_examples()])
def test_hook_example_is_a_valid_plugin(hook: str, example: str, fake_dists):
    """Each example defines a hook implementation that registers and answers its hook."""
    namespace: dict = {}
    exec(compile(example, f"<{hook} example>", "exec"), namespace)
    plugin = type("Example", (), {})()
    plugin.__dict__.update({k: v for k, v in namespace.items() if k.startswith("fulmen_")})
    manager = fulmen.get_plugin_manager()
    manager.register(plugin, f"example_{hook}")
    assert manager.plugins[f"example_{hook}"].status == "active"
    kwargs = {"environ": {}, "accelerator": "cpu", "num_devices": 1, "num_nodes": 1,
              "interactive": False, "distributed_backend": "gloo"}
    if hook == "fulmen_check_selection":
        from fulmen.kernel.compose import compose

        kwargs["selection"] = compose()
    results = manager.collect(hook, **kwargs)
    if hook in hookspecs.HOOK_KINDS.values():
        assert [p for p, _ in results].count(f"example_{hook}") >= 1
        manager.catalog()  # the records are valid and clash with nothing
