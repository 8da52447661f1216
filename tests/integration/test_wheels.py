"""``pip install fulmen`` is the user's path: wheels of every distribution, a clean virtualenv.

The fast test builds the ``fulmen`` wheel (the meta-distribution in ``meta/``) and checks its
metadata against the repository: it depends on the kernel (``fulmen-core``) and every default
plugin distribution, every optional plugin distribution is an extra, the kernel's "how to install
it" hints (``known_plugins.json``) name those extras, and no distribution depends on ``fulmen``
itself. The slow test does what a user does: builds every distribution's wheel, makes a new
virtualenv without the test environment's packages, ``pip install 'fulmen[deepspeed]'`` from those
wheels (third-party dependencies from the usual index, torch pinned by ``constraints.txt``), lists
the plugins and trains on two processes (ddp over gloo). Measured once with the machine at a load
average of ~30 on 2 cores (so slow): wheels 41 s, venv 73 s, pip install 731 s (torch unpacked
from the local wheel, deepspeed from pip's cache of its built wheel), listing 4 s, training 92 s;
942 s in all.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
META = REPO / "meta"
KNOWN = REPO / "core" / "src" / "fulmen" / "kernel" / "known_plugins.json"
#: Every distribution in the repository (the workspace root's pyproject.toml holds no project).
DISTS = sorted(p.parent for p in [*REPO.glob("*/pyproject.toml"),
                                  *REPO.glob("plugins/*/pyproject.toml")])
#: A third-party-style example package: installed in the tests, never by ``pip install fulmen``.
NOT_SHIPPED = {"fulmen-examples"}


def project(path: Path) -> dict:
    return tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def name_of(requirement: str) -> str:
    """``"fulmen-core[tensorboard]==0.1.0"`` -> ``"fulmen-core"``."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return match.group(0).lower()


def extra_of(requirement: str) -> str:
    """``"fulmen-deepspeed==0.1.0; extra == 'deepspeed'"`` -> ``"deepspeed"``."""
    match = re.search(r"""extra == ["']([^"']+)["']""", requirement)
    assert match, requirement
    return match.group(1)


def build_wheels(dists: list[Path], out: Path) -> list[Path]:
    """``pip wheel --no-deps`` of each distribution (hatchling from the test environment)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), *map(str, dists)], check=True, timeout=300)
    return sorted(out.glob("*.whl"))


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a built wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Requires-Dist:")]


def test_the_fulmen_wheel_depends_on_the_kernel_and_every_default_plugin(tmp_path):
    (wheel,) = build_wheels([META], tmp_path)
    assert wheel.name.startswith("fulmen-0.1.0-"), wheel.name
    requires = wheel_requirements(wheel)
    plain = {name_of(r) for r in requires if "extra ==" not in r}
    extras = {name_of(r): extra_of(r) for r in requires if "extra ==" in r}
    shipped = {project(d)["name"] for d in DISTS} - NOT_SHIPPED - {"fulmen"}
    defaults = {"fulmen-core", "fulmen-accelerators", "fulmen-strategies", "fulmen-precision",
                "fulmen-environments"}
    assert plain == defaults, requires
    # extras of fulmen that add a plugin distribution (others add e.g. mpi4py to a default one)
    optional = {dist: extra for dist, extra in extras.items() if dist not in defaults}
    assert shipped - defaults == optional.keys(), f"a plugin distribution is neither a " \
                                                  f"dependency nor an extra of fulmen: {requires}"
    assert optional["fulmen-deepspeed"] == "deepspeed"
    assert optional["fulmen-fairscale"] == "fairscale"

    # The kernel's hints for a missing name say how to get it: `pip install fulmen` covers the
    # defaults, so a name from an optional distribution points at its extra.
    for row in json.loads(KNOWN.read_text(encoding="utf-8")):
        dist = row["distribution"]
        assert dist in shipped, f"known_plugins.json names {dist!r}, which fulmen does not ship"
        if dist in optional:
            assert f"fulmen[{optional[dist]}]" in row.get("install", ""), row

    # A plugin distribution depends on the kernel, never on the meta-distribution (a cycle).
    for dist in DISTS:
        named = {name_of(r) for r in project(dist).get("dependencies", [])}
        if dist != META:
            assert "fulmen" not in named, f"{dist.name}/pyproject.toml depends on 'fulmen': " \
                                          "name 'fulmen-core' (the kernel) instead"


TRAIN = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import fulmen


    class Model(fulmen.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 2)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)


    if __name__ == "__main__":
        torch.manual_seed(0)
        data = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,))),
                          batch_size=8)
        trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1,
                                 logger=False, enable_checkpointing=False,
                                 enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Model(), data)
        print(f"RANK {trainer.global_rank}/{trainer.world_size} {trainer.strategy.name} "
              f"steps={trainer.global_step}", flush=True)
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 942 s measured with the machine at a load of ~30 on 2 cores
def test_pip_install_fulmen_with_an_extra_from_wheels_trains_on_two_processes(tmp_path):
    timings: dict[str, float] = {}
    start = time.perf_counter()
    wheels = tmp_path / "wheels"
    built = build_wheels(DISTS, wheels)
    assert len(built) == len(DISTS), [w.name for w in built]
    timings["build wheels"] = time.perf_counter() - start

    start = time.perf_counter()
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)  # clean: no system or test-environment packages
    python = str(env_dir / "bin" / "python")
    # Nothing of the test environment leaks in (PYTHONPATH, its venv).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "FULMEN_"))}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    timings["create venv"] = time.perf_counter() - start

    start = time.perf_counter()
    report = tmp_path / "install.json"
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "-c", str(REPO / "constraints.txt"), "--find-links", str(wheels),
                    "--report", str(report), "fulmen[deepspeed]==0.1.0"],
                   check=True, env=env, cwd=tmp_path, timeout=1200)
    timings["pip install 'fulmen[deepspeed]'"] = time.perf_counter() - start
    installed = {item["metadata"]["name"]: item["download_info"]["url"]
                 for item in json.loads(report.read_text())["install"]}
    ours = {name: url for name, url in installed.items() if name.startswith("fulmen")}
    assert set(ours) == {"fulmen", "fulmen-core", "fulmen-accelerators", "fulmen-strategies",
                         "fulmen-precision", "fulmen-environments", "fulmen-deepspeed"}, ours
    assert all(url.startswith(wheels.as_uri()) for url in ours.values()), ours
    assert "deepspeed" in installed and "torch" in installed

    start = time.perf_counter()
    listing = subprocess.run([str(env_dir / "bin" / "fulmen"), "plugins", "--json"], env=env,
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
    timings["fulmen plugins"] = time.perf_counter() - start
    assert listing.returncode == 0, listing.stderr
    data = json.loads(listing.stdout)
    assert data["errors"] == [] and all(p["status"] == "active" for p in data["plugins"]), data
    strategies = {n["name"] for n in data["names"]["strategy"]}
    assert {"ddp", "fsdp", "deepspeed", "deepspeed_stage_2", "deepspeed_stage_3_offload"} \
        <= strategies, strategies
    assert {n["name"] for n in data["names"]["accelerator"]} >= {"cpu", "cuda"}

    start = time.perf_counter()
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    done = subprocess.run([python, str(script)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    timings["train ddp x2"] = time.perf_counter() - start
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RANK 0/2 ddp steps=4" in done.stdout and "RANK 1/2 ddp steps=4" in done.stdout, \
        done.stdout + done.stderr
    print("\n".join(f"{what:34} {seconds:6.1f} s" for what, seconds in timings.items()))
