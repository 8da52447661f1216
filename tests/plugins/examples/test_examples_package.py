"""fulmen-examples, installed like any third-party package: its plugins are found through their
entry points, pass the conformance kit, and local_sgd trains on two processes under Trainer and
Lite."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
import torch

import fulmen
from fulmen.kernel.compose import compose
from fulmen.testing import check


def test_the_package_registers_three_plugins_through_entry_points():
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group="fulmen.plugins")
           if ep.dist is not None and ep.dist.metadata["Name"] == "fulmen-examples"}
    assert set(eps) == {"local_sgd", "scaled", "lab"}
    catalog = fulmen.get_plugin_manager().catalog()
    assert catalog.find("strategy", "local_sgd_spawn").plugin.name == "local_sgd"
    assert catalog.find("precision", "32-scaled").plugin.distribution == "fulmen-examples"


def test_the_lab_environment_is_detected_and_reports_the_scheduler_layout(monkeypatch):
    for var, value in {"LAB_RANK": "3", "LAB_WORLD_SIZE": "4", "LAB_LOCAL_RANK": "1",
                       "LAB_NODE_RANK": "1", "LAB_MAIN_PORT": "29999"}.items():
        monkeypatch.setenv(var, value)
    selection = compose(accelerator="cpu", devices=2, num_nodes=2, strategy="local_sgd",
                        environ={"LAB_RANK": "3"})
    env = selection.environment
    assert env.name == "lab" and env.creates_processes_externally
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (4, 3, 1, 1)
    assert selection.launcher is None  # the scheduler started every process


def test_the_static_scale_unscales_once_before_the_step():
    precision = fulmen.get_plugin_manager().catalog().find("precision", "32-scaled").record.create()
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=1.0)

    def closure():
        loss = (weight * torch.tensor([1.0, 2.0])).sum()
        precision.backward(loss)
        precision.unscale_gradients(optimizer)  # clipping would unscale here: not twice
        return loss

    precision.optimizer_step(optimizer, closure)
    assert weight.tolist() == [0.0, -1.0]


@pytest.mark.timeout(200)
def test_the_one_process_plugins_pass_the_kit():
    report = check(["scaled", "lab"])
    assert report.ok, report.failures


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_local_sgd_passes_the_kit_on_one_and_two_processes():
    report = check(["local_sgd"])
    assert report.ok, report.failures
    statuses = {(r.name, r.clause): r.status for r in report.results}
    for name in ("local_sgd", "local_sgd_spawn"):
        assert statuses[(name, "strategy.trainer_processes")] == "pass"
        assert statuses[(name, "strategy.lite_processes")] == "pass"


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("strategy", ["local_sgd", "local_sgd_spawn"])
def test_local_sgd_trains_on_two_processes_with_trainer_and_lite(run_script, strategy):
    run = run_script("local_sgd_train.py", "--strategy", strategy, timeout=240)
    assert run.returncode == 0, run.output
    for phase in ("fit", "lite"):
        r0, r1 = run.json(f"{phase}0"), run.json(f"{phase}1")
        assert (r0["world_size"], r1["world_size"]) == (2, 2)
        assert sorted(r0["seen"] + r1["seen"]) == list(range(32))  # each rank its own half
        assert r0["weights"] == pytest.approx(r1["weights"])  # averaged after the last step
    assert run.json("fit0")["strategy"] == "LocalSGDStrategy"
    assert run.json("main")["returned"] == 0


def test_the_guide_shows_every_file_of_the_package_as_it_is():
    """docs/writing-plugins.md builds this package step by step: each block that starts with
    ``# plugins/examples/<file>`` is that file, verbatim."""
    root = Path(__file__).resolve().parents[3]
    page = (root / "docs" / "writing-plugins.md").read_text()
    shown = {}
    for block in re.findall(r"^```(?:python|toml)\n(.*?)^```", page, re.S | re.M):
        first, _, rest = block.partition("\n")
        if first.startswith("# plugins/examples/"):
            shown[first[2:]] = rest
    package = root / "plugins" / "examples"
    top = package / "src" / "fulmen_examples" / "__init__.py"  # re-exports only
    files = {f"plugins/examples/{p.relative_to(package)}" for p in package.rglob("*")
             if p.suffix in (".py", ".toml") and p != top}
    assert set(shown) == files
    for name, text in shown.items():
        assert text == (root / name).read_text(), name
