"""A stranger's strategy package, pip-installed like any plugin: a ``DDPStrategy`` subclass that
overrides nothing trains on two processes, because the strategy (not its record) chooses its
launcher (issue 15: this hung until the collective timeout)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from processes import FIXTURES, script_runner
from test_ddp import weights_equal

from conftest import SCRIPTS

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

FILES = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "fulmen-acme-ddp"
        version = "1.0.0"
        dependencies = ["fulmen-core", "fulmen-strategies"]

        [project.entry-points."fulmen.plugins"]
        acme_ddp = "acme"

        [tool.setuptools]
        py-modules = ["acme"]
        """,
    "acme.py": """
        from fulmen import StrategySpec, hookimpl
        from fulmen_strategies import DDPStrategy


        class AcmeDDP(DDPStrategy):
            pass


        @hookimpl
        def fulmen_strategies():
            yield StrategySpec(name="acme_ddp", target="acme:AcmeDDP",
                               accelerators=["cpu", "cuda"], interactive=False,
                               description="Acme's DDP (adds nothing)")
            yield StrategySpec(name="acme_ddp_spawn", target="acme:AcmeDDP",
                               init_kwargs={"start_method": "spawn"},
                               accelerators=["cpu", "cuda"], description="Acme's DDP, spawned")
        """,
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("acme-ddp")
    source, target = root / "fulmen-acme-ddp", root / "site"
    source.mkdir()
    for name, text in FILES.items():
        (source / name).write_text(textwrap.dedent(text).lstrip())
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, timeout=180, capture_output=True)
    return target


def run_acme(site: Path, tmp_path: Path, strategy: str) -> Any:
    run = script_runner(tmp_path, SCRIPTS, 150)
    return run("train.py", "--strategy", strategy, "--devices", "2", "--epochs", "1",
               env={"PYTHONPATH": f"{site}:{SCRIPTS}:{FIXTURES}", "OMP_NUM_THREADS": "1"})


def test_a_ddp_subclass_from_another_package_trains_on_two_processes(site, tmp_path):
    done = run_acme(site, tmp_path, "acme_ddp")
    assert done.returncode == 0, done.output
    r0, r1 = done.json("rank0"), done.json("rank1")
    assert (r0["world_size"], r1["world_size"]) == (2, 2)
    assert r0["strategy"] == "acme_ddp"
    assert sorted(r0["seen"] + r1["seen"]) == list(range(32))  # each rank saw its own shard
    assert weights_equal(r0["weights"], r1["weights"], atol=0)  # gradients were averaged


def test_its_spawn_variant_gets_the_multiprocessing_launcher(site, tmp_path):
    done = run_acme(site, tmp_path, "acme_ddp_spawn")
    assert done.returncode == 0, done.output
    main = done.json("main")
    # 32 samples, batch 4: 4 steps when two ranks share the epoch (8 on one process)
    assert (main["strategy"], main["world_size"], main["global_step"]) == ("acme_ddp_spawn", 2, 4)
