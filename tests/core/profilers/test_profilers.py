"""Profilers on their own (Lightning's tests_pytorch/profilers/test_profiler.py, the parts that do
not need a Trainer; the Trainer integration is tested with the Trainer)."""

from __future__ import annotations

import pickle
import time

import pytest
import torch

from fulmen.errors import ConfigurationError, FulmenError
from fulmen.profilers import (
    AdvancedProfiler,
    PassThroughProfiler,
    PyTorchProfiler,
    SimpleProfiler,
    resolve,
)


@pytest.mark.parametrize(("action", "expected"), [("a", [3, 1]), ("b", [2]), ("c", [1])])
def test_simple_profiler_durations(action, expected):
    """Lightning's test_simple_profiler_durations (sleep-based, with a tolerance)."""
    profiler = SimpleProfiler()
    for duration in expected:
        with profiler.profile(action):
            time.sleep(duration / 20)
    recorded = profiler.recorded_durations[action]
    assert len(recorded) == len(expected)
    assert all(abs(r - e / 20) < 0.05 for r, e in zip(recorded, expected))


def test_simple_profiler_refuses_overlapping_and_unstarted_actions():
    profiler = SimpleProfiler()
    profiler.start("a")
    with pytest.raises(FulmenError, match="'a' was started twice"):
        profiler.start("a")
    with pytest.raises(FulmenError, match="'b' was stopped but never started"):
        profiler.stop("b")


@pytest.mark.parametrize("extended", [True, False])
def test_simple_profiler_summary_and_file(tmp_path, extended):
    profiler = SimpleProfiler(dirpath=tmp_path, filename="profiler", extended=extended)
    profiler.setup("fit", local_rank=0)
    for _ in range(3):
        with profiler.profile("training_step"):
            time.sleep(0.01)
    summary = profiler.summary()
    assert "FIT Profiler Report" in summary and "training_step" in summary
    assert ("Num calls" in summary) == extended and ("Percentage %" in summary) == extended
    profiler.describe()
    written = (tmp_path / "fit-profiler-0.txt").read_text()
    assert "training_step" in written


def test_advanced_profiler_reports_cprofile_stats_per_action(tmp_path):
    profiler = AdvancedProfiler(dirpath=tmp_path, filename="adv", dump_stats=True)
    profiler.setup("fit", local_rank=0)
    with profiler.profile("work"):
        sum(i * i for i in range(10000))
    summary = profiler.summary()
    assert "Profile stats for: work rank: 0" in summary and "function calls" in summary
    assert (tmp_path / "fit-adv-0-work.prof").exists()
    assert pickle.loads(pickle.dumps(profiler)).profiled_actions == {}


def test_pytorch_profiler_table_and_chrome_trace(tmp_path):
    profiler = PyTorchProfiler(dirpath=tmp_path, filename="pt")
    profiler.setup("fit", local_rank=0)
    with profiler.profile("training_step"):
        torch.randn(64, 64) @ torch.randn(64, 64)
    summary = profiler.summary()
    assert "training_step" in summary and "aten::mm" in summary
    assert profiler.trace_path is not None and profiler.trace_path.stat().st_size > 0


def test_resolve_names_instances_and_bad_values():
    assert isinstance(resolve(None), PassThroughProfiler)
    assert isinstance(resolve("simple"), SimpleProfiler)
    assert isinstance(resolve("Advanced"), AdvancedProfiler)
    mine = SimpleProfiler()
    assert resolve(mine) is mine
    with pytest.raises(ConfigurationError, match=r"profiler='fast'.*'simple', 'advanced', "
                                                 r"'pytorch'"):
        resolve("fast")
