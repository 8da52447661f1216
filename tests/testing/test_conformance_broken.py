"""Deliberately broken plugins fail the kit: each failure names the clause, the plugin and its
distribution, and says how to fix it; none hangs."""

from __future__ import annotations

import pytest

from fulmen.cli import main
from fulmen.testing import check

pytestmark = pytest.mark.timeout(300)

BROKEN = '''
import os

import fulmen
from fulmen import AcceleratorSpec, EnvironmentSpec, PrecisionSpec, StrategySpec, hookimpl
from fulmen_accelerators import CPUAccelerator
from fulmen_environments import LocalEnvironment
from fulmen_strategies import DDPStrategy


class CountingCPU(CPUAccelerator):
    @classmethod
    def auto_device_count(cls):
        return "2"  # a contract member that returns the wrong type


class ListStatePrecision(fulmen.Precision):
    def state_dict(self):
        return [1.0]


class NosyEnvironment(LocalEnvironment):
    @staticmethod
    def detect():
        os.environ["NOSY_WAS_HERE"] = "1"
        return False

    def world_size(self):
        return "2"


class Nothing(fulmen.Strategy):
    """A subclass that overrides nothing."""


class StartsNone(DDPStrategy):
    """Declares a process per device, but starts none."""

    def create_launcher(self):
        return None


HERE = __name__


@hookimpl
def fulmen_accelerators():
    yield AcceleratorSpec(name="counting_cpu", target=f"{HERE}:CountingCPU", device_type="cpu")


@hookimpl
def fulmen_precisions():
    yield PrecisionSpec(name="list-state", target=f"{HERE}:ListStatePrecision")


@hookimpl
def fulmen_environments():
    yield EnvironmentSpec(name="nosy", target=f"{HERE}:NosyEnvironment")


@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="nothing", target=f"{HERE}:Nothing")
    yield StrategySpec(name="starts_none", target=f"{HERE}:StartsNone", accelerators=["cpu"])
'''


@pytest.fixture
def broken(fake_dists):
    module = fake_dists.unique("acme_broken")
    fake_dists.add("acme-broken", {"acme_broken": module}, {module: BROKEN})
    fake_dists.reload()
    return module


def verdicts(report):
    return {(r.name, r.clause): r for r in report.results}


def test_each_broken_contract_fails_its_clause(broken):
    report = check(["acme_broken"], timeout=90)
    assert not report.ok
    got = verdicts(report)
    expected = {
        ("counting_cpu", "accelerator.availability"): "auto_device_count() returned '2'",
        ("list-state", "precision.state"): "state_dict() returned list, not dict",
        ("nosy", "environment.detect_pure"): "detect() changed environment variables: "
                                             "NOSY_WAS_HERE",
        ("nosy", "environment.ranks"): "world_size() returned '2', not an int",
        ("nothing", "plugin.loads"): "Can't instantiate abstract class Nothing",
        ("starts_none", "strategy.processes"): "create_launcher() returned None",
    }
    for key, message in expected.items():
        result = got[key]
        assert result.status == "fail" and message in result.detail, (key, result)
        assert (result.plugin, result.distribution) == ("acme_broken", "acme-broken")
    # What the broken member does not touch still passes; later clauses are not blamed.
    assert got[("starts_none", "strategy.trainer")].status == "pass"
    assert got[("nothing", "strategy.trainer")].status == "skip"
    # a skip says which clause stopped it, once (the cause is on that clause's line)
    assert got[("nothing", "strategy.trainer")].detail == "not run: plugin.loads failed"
    assert got[("nothing", "plugin.loads")].detail.count("Can't instantiate") == 1
    assert got[("list-state", "precision.forward_backward")].status == "pass"
    assert {r.name for r in report.failures} == {"counting_cpu", "list-state", "nosy",
                                                 "nothing", "starts_none"}


def test_the_table_names_the_clause_the_plugin_and_the_fix(broken, capsys):
    assert main(["plugins", "--check", "list-state", "--timeout", "60"]) == 1
    out = capsys.readouterr().out
    assert ("- precision 'list-state' (plugin 'acme_broken', acme-broken) breaks "
            "precision.state at ") in out
    assert "state_dict() returned list, not dict" in out
    assert "hint: state_dict returns a list ([1.0]): return a dict" in out
    assert "1 failed" in out
