"""Shared fixtures. ``fake_dists`` installs throw-away plugin distributions on ``sys.path``: a real
``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt``, found by importlib.metadata
exactly as a pip-installed plugin would be."""

from __future__ import annotations

import importlib
import importlib.metadata
import itertools
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fulmen

_counter = itertools.count()

# As `make` does: torch C++ extensions (DeepSpeed's CPU op) live in this venv, so a build never
# waits on a lock another checkout's killed build left in the shared ~/.cache.
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(Path(sys.prefix) / "torch_extensions"))


@pytest.fixture(autouse=True)
def _environment_per_test() -> Iterator[None]:
    """Each test starts from the session's environment variables: a launcher that made the
    pytest process a rank (LOCAL_RANK, WORLD_SIZE...) must not change what later tests see."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


class FakeDists:
    """Writes fake distributions into one folder that is put first on ``sys.path``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: list[str] = []

    def unique(self, stem: str) -> str:
        """A module name no other test uses (sys.modules is shared by the whole session)."""
        return f"{stem}_{next(_counter)}"

    def add(self, dist: str, entry_points: dict[str, str], modules: dict[str, str] | None = None,
            version: str = "1.0") -> None:
        """Install distribution ``dist`` with ``entry_points`` (name → value) in the
        ``fulmen.plugins`` group, and ``modules`` (dotted name → source) beside it."""
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
        (info / "entry_points.txt").write_text(f"[fulmen.plugins]\n{lines}\n")
        for name, source in (modules or {}).items():
            path = self.root.joinpath(*name.split(".")).with_suffix(".py")
            path.parent.mkdir(parents=True, exist_ok=True)
            for parent in list(path.parents)[: name.count(".")]:
                (parent / "__init__.py").touch()
            path.write_text(textwrap.dedent(source))
            self.modules.append(name)

    def reload(self) -> fulmen.kernel.manager.PluginManager:  # type: ignore[name-defined]
        return fulmen.reload_plugins()


@pytest.fixture
def fake_dists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDists]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    for var in ("FULMEN_DISABLE_PLUGINS", "FULMEN_PLUGIN_AUTOLOAD", "FULMEN_PLUGINS",
                "FULMEN_STRICT_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    dists = FakeDists(root)
    yield dists
    monkeypatch.undo()
    for name in dists.modules:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
    fulmen.reload_plugins()


@pytest.fixture(autouse=True)
def _run_in_a_temporary_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trainers default to the working directory for logs and checkpoints: never the repo's."""
    monkeypatch.chdir(tmp_path)


FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))  # tiny_models: importable by tests and by class_path


@pytest.fixture
def fake_hardware(fake_dists: FakeDists, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Install the fake hardware plugin (tests/fixtures/fake_hardware.py) as distribution
    ``fulmen-fake-hardware``; returns its module. Environment variables drive it."""
    module = fake_dists.unique("fake_hardware")
    fake_dists.add("fulmen-fake-hardware", {"fake_hardware": module},
                   {module: (FIXTURES / "fake_hardware.py").read_text()})
    for var in ("FAKE_GPU_COUNT", "FAKE_GPU_DETECT", "FAKE_CLUSTER_WORLD", "FAKE_CLUSTER_RANK"):
        monkeypatch.delenv(var, raising=False)
    # The fake plugin brings its own multi-device strategies; the real ones (fulmen-strategies
    # and the extra packages under plugins/) would make the kernel's tests depend on which
    # strategy plugins are installed.
    keep = {"fulmen-accelerators", "fulmen-precision", "fulmen-environments",
            "fulmen-fake-hardware"}
    real = sorted(ep.name for ep in importlib.metadata.entry_points(group="fulmen.plugins")
                  if ep.dist is not None and ep.dist.metadata["Name"] not in keep
                  and ep.name != "single_device")
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", ",".join(real))
    fake_dists.reload()
    return importlib.import_module(module)


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Set FULMEN_* variables for one test; plugins are rediscovered before and after."""
    yield monkeypatch
    monkeypatch.undo()
    fulmen.reload_plugins()


@pytest.fixture
def python_without(tmp_path: Path) -> Any:
    """``python_without("fulmen-deepspeed")``: a Python command line (code on stdin) whose
    environment lacks the distribution: a copy of this venv's site-packages (symlinks) without
    the distribution's files — as if it was never installed."""
    return lambda distribution: _python_without(distribution, tmp_path / "env")


def _python_without(distribution: str, root: Path) -> list[str]:
    site = Path(importlib.metadata.distribution("pluggy").locate_file(""))
    target = root / "site-packages"
    target.mkdir(parents=True)
    owned: set[str] = set()  # top-level entries of site-packages the distribution installed
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        top = file.parts[0]
        if top not in ("..", "__pycache__"):
            owned.add(top)
    for entry in site.iterdir():
        if entry.name not in owned:
            (target / entry.name).symlink_to(entry)
    return [sys.executable, "-S", "-c",
            f"import site, sys; site.addsitedir({str(target)!r}); sys.argv[1:] = []; "
            "exec(sys.stdin.read())"]


@pytest.fixture
def metadata() -> Iterator[Any]:
    """AWS, GCP and Azure instance-metadata endpoints served on loopback (``metadata.url``;
    ``metadata.preempted.set()`` schedules the interruption): ``tests/fixtures/metadata_server``."""
    from metadata_server import serve

    yield from serve()
