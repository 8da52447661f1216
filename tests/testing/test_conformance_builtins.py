"""Every installed plugin passes ``fulmen plugins --check`` (built-ins, fairscale, deepspeed,
torchft, the example package; horovod where Horovod is importable), and strategies that break
the process contract fail it within the timeout instead of hanging."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time

import pytest

from fulmen.testing import check

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BUILTIN_DISTRIBUTIONS = {"fulmen-accelerators", "fulmen-strategies", "fulmen-precision",
                         "fulmen-environments", "fulmen-deepspeed", "fulmen-fairscale",
                         "fulmen-torchft"}


def test_every_installed_plugin_passes(tmp_path):
    """Every plugin, ``model_parallel`` included: the kit's model parallelises itself on a
    strategy's ``device_mesh`` and the sampling clause follows ``Strategy.data_parallel_rank``."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "fulmen", "plugins", "--check"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=850)
    elapsed = time.monotonic() - start
    print(f"fulmen plugins --check: {elapsed:.1f} s")  # the figure the issue asks for
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    out = done.stdout
    for dist in BUILTIN_DISTRIBUTIONS:
        assert dist in out
    for name in ("strategy ddp_spawn", "strategy fsdp", "strategy deepspeed_stage_3",
                 "strategy ddp_sharded_spawn", "strategy pipe", "strategy model_parallel",
                 "strategy torchft",
                 "precision bf16-mixed",
                 "environment torchelastic", "accelerator cpu"):
        assert name in out, name
    if importlib.util.find_spec("horovod") is None:
        assert "strategy horovod" in out and "a dependency is not installed here" in out


HANGING = '''
import fulmen
from fulmen import StrategySpec, hookimpl
from fulmen_strategies import DDPStrategy


class InPlace(fulmen.Launcher):
    """Claims to launch, but runs the function in this process only."""

    def launch(self, function, *args, **kwargs):
        return function(*args, **kwargs)


class Pretends(DDPStrategy):
    def create_launcher(self):
        return InPlace(self)


class AcmeDDP(DDPStrategy):
    """Adds nothing: inherits DDP's launcher."""


@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="pretends", target=f"{__name__}:Pretends", accelerators=["cpu"])
    yield StrategySpec(name="acme_ddp", target=f"{__name__}:AcmeDDP", accelerators=["cpu"])
'''


def test_a_launcher_that_starts_no_peer_fails_at_the_timeout_and_a_subclass_passes(fake_dists):
    module = fake_dists.unique("acme_launch")
    fake_dists.add("acme-launch", {"acme_launch": module}, {module: HANGING})
    fake_dists.reload()
    start = time.monotonic()
    report = check(["acme_launch"], timeout=45)
    assert time.monotonic() - start < 200
    got = {(r.name, r.clause): r for r in report.results}
    hung = got[("pretends", "strategy.processes")]
    assert hung.status == "fail", hung
    assert (hung.plugin, hung.distribution) == ("acme_launch", "acme-launch")
    assert "timed out after 45 s" in hung.detail or "never finished" in hung.detail, hung
    assert got[("pretends", "strategy.trainer")].status == "pass"  # one process is fine
    acme = [r for r in report.results if r.name == "acme_ddp"]
    assert all(r.status == "pass" for r in acme), [r for r in acme if r.status != "pass"]
