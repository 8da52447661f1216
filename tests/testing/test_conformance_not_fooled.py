"""Plugins broken the way authors really break them fail ``fulmen plugins --check NAME``: the
command exits non-zero well within 4 minutes and names the plugin, its distribution, the broken
collective or phase, the ranks and the plugin's own line, with a hint computed from what the
ranks did (issue 33). Each runs the real CLI in a subprocess on a fake plugin distribution."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(300)

BAD = '''
from fulmen import PrecisionSpec, StrategySpec, hookimpl
from fulmen_precision import Precision32
from fulmen_strategies import DDPStrategy


class BarrierOnRankZero(DDPStrategy):
    def barrier(self, name=None):  # BARRIER
        if self.global_rank == 0:
            super().barrier(name)


class NoSuperSetup(DDPStrategy):
    def setup_environment(self):  # SETUP
        self.accelerator.setup_device(self.root_device)


class BroadcastNone(DDPStrategy):
    def broadcast(self, obj, src=0):  # BROADCAST
        super().broadcast(obj, src)


class GatherReturnsInput(DDPStrategy):
    def all_gather(self, tensor, sync_grads=False):  # GATHER
        return tensor


class SkipsOddSteps(DDPStrategy):
    """Local SGD written for the Trainer only: gradients are synchronised every second
    training_step; a Lite forward is left alone."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def step(self, method, *args, **kwargs):  # STEP
        if method == "training_step":
            self.calls += 1
            if self.calls % 2:
                with self.no_backward_sync():
                    return super().step(method, *args, **kwargs)
        return super().step(method, *args, **kwargs)


class SkipsOddForwards(SkipsOddSteps):
    """The same, for the Trainer's training_step and Lite's forward alike."""

    def step(self, method, *args, **kwargs):
        if method == "forward":
            self.calls += 1
            if self.calls % 2:
                with self.no_backward_sync():
                    return super(SkipsOddSteps, self).step(method, *args, **kwargs)
            return super(SkipsOddSteps, self).step(method, *args, **kwargs)
        return super().step(method, *args, **kwargs)


class SyncsAnyway(DDPStrategy):
    """Claims to skip synchronisation, but enters DDP's no_sync only around nothing."""

    def no_backward_sync(self):  # NOSYNC
        import contextlib
        return contextlib.nullcontext()


class NotAContext(Precision32):
    def forward_context(self):  # CONTEXT
        yield


@hookimpl
def fulmen_strategies():
    for name, cls in (("barrier_rank0", BarrierOnRankZero), ("no_super_setup", NoSuperSetup),
                      ("broadcast_none", BroadcastNone), ("gather_input", GatherReturnsInput),
                      ("skips_odd", SkipsOddSteps), ("syncs_anyway", SyncsAnyway),
                      ("skips_odd_forwards", SkipsOddForwards)):
        yield StrategySpec(name=name, target=cls, accelerators=["cpu"])


@hookimpl
def fulmen_precisions():
    yield PrecisionSpec(name="not-a-context", target=NotAContext)
'''


@pytest.fixture
def bad(fake_dists):
    module = fake_dists.unique("acme_bad")
    fake_dists.add("acme-bad", {"acme_bad": module}, {module: BAD})
    fake_dists.reload()
    path = fake_dists.root / f"{module}.py"
    lines = path.read_text().splitlines()

    def line_of(marker: str) -> str:
        return f"{path}:{next(i for i, text in enumerate(lines, 1) if f'# {marker}' in text)}"

    def check(*names: str, timeout: int = 60) -> tuple[int, str, float]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(fake_dists.root), *filter(None, [os.environ.get("PYTHONPATH")])])}
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "fulmen", "plugins", "--check", *names,
                               "--timeout", str(timeout)], capture_output=True, text=True,
                              env=env, timeout=280)
        return done.returncode, done.stdout + done.stderr, time.monotonic() - start

    return line_of, check


def failure(out: str, name: str) -> str:
    """The failure paragraphs of ``name`` in the table's output."""
    head = f"- {'precision' if name == 'not-a-context' else 'strategy'} {name!r}"
    found = [p if p.startswith("- ") else "- " + p for p in out.split("\n- ")]
    return "\n".join(p for p in found if p.startswith(head))


def test_a_forward_context_that_is_no_context_manager_and_an_all_gather_of_the_input(bad):
    line_of, check = bad
    code, out, seconds = check("not-a-context", "gather_input")
    assert code == 1 and seconds < 240, out
    text = failure(out, "not-a-context")
    assert "(plugin 'acme_bad', acme-bad) breaks precision.forward_backward" in text
    assert f"at {line_of('CONTEXT')}" in text and "torch/optim" not in text, text
    assert "forward_context() returned <generator" in text
    assert "decorate it with @contextlib.contextmanager" in text
    text = failure(out, "gather_input")
    assert "(plugin 'acme_bad', acme-bad) breaks strategy.collectives on rank(s) 0, 1" in text
    assert f"at {line_of('GATHER')}" in text
    assert "all_gather(tensor([rank, 7])) gave tensor([1, 7]), expected" in text
    assert "returned this rank's own input unchanged" in text


def test_a_strategy_whose_lite_and_trainer_training_differ(bad):
    """Lite sends each forward through ``Strategy.step('forward', ...)``: a step that only
    customises ``'training_step'`` trains differently there, and the kit compares the weights
    each rank ends with."""
    line_of, check = bad
    code, out, seconds = check("skips_odd")
    assert code == 1 and seconds < 240, out
    text = failure(out, "skips_odd")
    assert "(plugin 'acme_bad', acme-bad) breaks strategy.lite_matches_trainer" in text
    assert f"at {line_of('STEP')}" in text
    assert "Trainer and Lite weights differ on rank(s) [0, 1]" in text
    assert "Strategy.step('forward', ...)" in text


@pytest.mark.slow
def test_the_same_strategy_customised_for_lite_too_passes(bad):
    _, check = bad
    code, out, _ = check("skips_odd_forwards")
    assert code == 0, out


@pytest.mark.slow
def test_a_no_backward_sync_that_does_not_skip(bad):
    line_of, check = bad
    code, out, _ = check("syncs_anyway")
    assert code == 1, out
    text = failure(out, "syncs_anyway")
    assert "breaks strategy.no_backward_sync on rank(s) 0, 1" in text
    assert f"at {line_of('NOSYNC')}" in text and "nothing was skipped" in text


@pytest.mark.slow
def test_a_barrier_only_rank_zero_enters(bad):
    line_of, check = bad
    code, out, seconds = check("barrier_rank0", timeout=45)
    assert code == 1 and seconds < 240, out
    text = failure(out, "barrier_rank0")
    assert "(plugin 'acme_bad', acme-bad) breaks strategy.collectives" in text
    assert "timed out after 45 s" in text and f"at {line_of('BARRIER')}" in text
    assert "rank 0 never returned from barrier(" in text
    assert "returned on rank(s) [1] while rank 0 still waits in it" in text


@pytest.mark.slow
def test_setup_environment_without_super(bad):
    line_of, check = bad
    code, out, seconds = check("no_super_setup")
    assert code == 1 and seconds < 240, out
    text = failure(out, "no_super_setup")
    assert "(plugin 'acme_bad', acme-bad) breaks strategy.processes" in text
    assert f"at {line_of('SETUP')}" in text
    assert "without a torch.distributed process group" in text
    assert "super().setup_environment()" in text


@pytest.mark.slow
def test_a_broadcast_that_returns_none(bad):
    line_of, check = bad
    code, out, seconds = check("broadcast_none")
    assert code == 1 and seconds < 240, out
    text = failure(out, "broadcast_none")
    assert "(plugin 'acme_bad', acme-bad) breaks strategy.collectives" in text
    assert f"at {line_of('BROADCAST')}" in text
    assert "broadcast({'rank': rank}, src=0) gave None" in text
    assert "broadcast returns None" in text


FAILS_TO_IMPORT = '''
import fulmen

VERSION = 1
raise ImportError("acme_gone needs libacme, which is not installed")  # RAISES
'''

QUIET = '''
from fulmen import EnvironmentSpec, hookimpl
from fulmen_environments import LocalEnvironment


class QuietEnvironment(LocalEnvironment):
    pass


@hookimpl
def fulmen_environments():
    yield EnvironmentSpec(name="quiet", target=QuietEnvironment)
'''


def test_a_plugin_that_failed_to_import_and_a_disabled_one_are_checked(fake_dists,
                                                                       monkeypatch):
    """Listed as failed or disabled by ``fulmen plugins``, they are checked by name: the failed
    one fails ``plugin.loads`` at its own line, the disabled one is checked with it enabled."""
    gone, quiet = fake_dists.unique("acme_gone"), fake_dists.unique("acme_quiet")
    fake_dists.add("acme-gone", {"acme_gone": gone}, {gone: FAILS_TO_IMPORT})
    fake_dists.add("acme-quiet", {"acme_quiet": quiet}, {quiet: QUIET})
    env = {**os.environ, "FULMEN_DISABLE_PLUGINS": "acme_quiet", "PYTHONPATH": os.pathsep.join(
        [str(fake_dists.root), *filter(None, [os.environ.get("PYTHONPATH")])])}

    def check(*names: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fulmen", "plugins", "--check", *names],
                              capture_output=True, text=True, env=env, timeout=200)

    done = check("acme_gone")
    assert done.returncode == 1, done.stdout + done.stderr
    path = fake_dists.root / f"{gone}.py"
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "# RAISES" in t)
    assert (f"- plugin 'acme_gone' (plugin 'acme_gone', acme-gone) breaks plugin.loads at "
            f"{path}:{line}: plugin 'acme_gone' failed to load: ImportError: acme_gone needs "
            "libacme") in done.stdout, done.stdout
    assert "neither a registered name" not in done.stdout + done.stderr
    done = check("acme_quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "plugin acme_quiet  plugin.loads             pass (disabled where the check " \
        "started" in done.stdout, done.stdout
    assert "environment quiet" in done.stdout and "environment.ranks" in done.stdout
