"""``fulmen.testing`` and ``fulmen plugins --check``: selection, the table, the pytest plugin,
and a representative set of built-ins (one-process runs only; every built-in, with its
two-process runs, is in test_conformance_builtins.py under ``slow``)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fulmen
from fulmen.cli import main
from fulmen.testing import CLAUSES, check, clauses_for, select_targets

pytestmark = pytest.mark.timeout(240)


def test_importing_the_kit_imports_no_torch_and_no_plugin():
    code = ("import sys, fulmen, fulmen.testing; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'fulmen_strategies', 'fulmen_accelerators', 'fulmen_precision', "
            "'fulmen_environments', 'fulmen_deepspeed', 'fulmen_fairscale', 'pytest')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_every_clause_has_a_promise_and_a_fix():
    for kind in ("accelerator", "precision", "environment", "strategy"):
        ids = [c.id for c in clauses_for(kind)]
        assert ids[0] == "plugin.loads" and len(ids) >= 3
    assert all(c.promise and c.fix for c in CLAUSES.values())


def test_names_select_registered_names_and_whole_plugins():
    picked = {(t.kind, t.name) for t in select_targets(["16-mixed", "mixed", "gpu"])}
    assert picked == {("precision", "16-mixed"), ("precision", "bf16-mixed"),
                      ("accelerator", "cuda")}
    ddp = {t.name for t in select_targets(["ddp"])}  # a name, and the plugin of six names
    assert {"ddp", "ddp_spawn", "ddp_fork", "ddp_notebook"} <= ddp
    target = select_targets(["single_device"])[0]
    assert (target.plugin, target.distribution) == ("single_device", "fulmen-strategies")
    with pytest.raises(fulmen.ConfigurationError, match="'nope' is neither a registered name"):
        select_targets(["nope"])


def test_check_prints_a_table_of_clauses_and_exits_zero(capsys):
    code = main(["plugins", "--check", "cpu", "cuda", "32-true", "16-mixed", "local", "slurm",
                 "single_device"])
    out = capsys.readouterr().out
    assert code == 0, out
    header = out.splitlines()[0].split()
    assert header == ["plugin", "distribution", "name", "clause", "result"]
    assert any(line.split()[:6] == ["single_device", "fulmen-strategies", "strategy",
                                    "single_device", "strategy.collectives", "pass"]
               for line in out.splitlines())
    assert "precision.state" in out and "environment.detect_pure" in out
    # What this machine cannot run is a skip with its reason, never a pass or a failure.
    assert re.search(r"accelerator.setup +skip \(no cuda device on this machine", out)
    assert re.search(r"environment.ranks +skip \(not running under 'slurm'", out)
    assert re.search(r"strategy.processes +skip \(its record allows 1 device", out)
    assert re.search(r"strategy.no_backward_sync +skip \(", out)
    assert re.search(r"7 names: \d+ clauses passed, 0 failed, \d+ skipped, in [\d.]+ s", out)


@pytest.mark.timeout(240)
def test_a_model_parallel_strategy_passes_on_two_processes():
    """The kit's model parallelises itself on ``Strategy.device_mesh`` (tensor parallelism over
    2 ranks here), and ranks of one data-parallel replica must see the same samples."""
    report = check(["model_parallel"])
    verdicts = {r.clause: r.status for r in report.results}
    assert report.ok, report.as_dict()
    assert verdicts["strategy.trainer_processes"] == verdicts["strategy.lite_processes"] == "pass"


def test_report_as_data_with_the_fix_of_each_clause():
    report = check(["cpu"])
    assert report.ok and report.seconds > 0
    assert [r.clause for r in report.results] == [c.id for c in clauses_for("accelerator")]
    assert report.as_dict()["results"][0]["fix"] == CLAUSES["plugin.loads"].fix


def test_the_pytest_plugin_adds_one_test_per_clause(tmp_path: Path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nfulmen_check = cpu local\n")
    (tmp_path / "test_vendor.py").write_text(textwrap.dedent("""
        def test_the_fixture_runs_the_kit(fulmen_check):
            report = fulmen_check(["32-true"])
            assert report.ok, report.failures
            assert {r.clause for r in report.results} >= {"precision.state"}
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "fulmen.testing", "-v",
                           "-p", "no:cacheprovider", "--fulmen-check", "64-true"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=200)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ("fulmen-check[accelerator:cpu:accelerator.parse_devices] PASSED",
                 "fulmen-check[environment:local:environment.ranks] PASSED",
                 "fulmen-check[precision:64-true:precision.forward_backward] PASSED",
                 "test_vendor.py::test_the_fixture_runs_the_kit PASSED"):
        assert line in done.stdout, done.stdout
