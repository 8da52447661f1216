"""Lite's loop answers stop notices and measures lost work, in one process: ``lite.should_stop``
at the loop's step boundary, the preemption checkpoint through ``lite.save``, the scheduler's
exit status, and the resume ``lite.load`` accounts for (log, loggers, later checkpoints)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import fulmen
from fulmen.errors import FulmenError
from fulmen.fault_tolerance import lost_work
from fulmen.loggers import CSVLogger

STEPS = 12


def loop(lite: fulmen.Lite, folder: Path, at: int | None = None, crash: int | None = None,
         every: int = 4, notify: Any = None) -> dict[str, Any]:
    """A raw loop: checkpoint every ``every`` steps; at step ``at`` call ``notify`` (default:
    SIGTERM to itself); at step ``crash`` fail hard (after the heartbeat saw the step)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = lite.setup(model, optimizer)
    state: dict[str, Any] = {"model": model, "optimizer": optimizer, "step": 0}
    last = folder / "last.ckpt"
    if last.exists():
        lite.load(last, state)
    data = torch.Generator().manual_seed(1)
    batches = [torch.randn(8, 4, generator=data) for _ in range(STEPS)]
    for step in range(state["step"] + 1, STEPS + 1):
        optimizer.zero_grad()
        lite.backward(model(batches[step - 1]).square().mean())
        optimizer.step()
        if step == at:  # arrives while step ``at`` runs
            (notify or (lambda: os.kill(os.getpid(), signal.SIGTERM)))()
        if lite.should_stop():  # the step boundary: ``step`` steps done
            state["step"] = step
            lite.save(last, state)
            return {"stopped": step}
        if step == crash:
            time.sleep(lost_work.HEARTBEAT_SECONDS * 3)
            raise RuntimeError("the node died")
        if step % every == 0:
            state["step"] = step
            lite.save(last, state)
    return {"weights": model.weight.detach().clone(), "step": step}


def test_sigterm_stops_the_loop_at_that_step_saves_and_exits_143(tmp_path, caplog):
    caplog.set_level("INFO", logger="fulmen")
    straight = fulmen.Lite(accelerator="cpu", devices=1).launch(loop, tmp_path / "straight")
    before = signal.getsignal(signal.SIGTERM)
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    with pytest.raises(SystemExit) as stopped:
        lite.launch(loop, tmp_path, 6)
    assert stopped.value.code == 143 and signal.getsignal(signal.SIGTERM) is before
    assert lite.preemption.action == "stop" and lite.preemption.exit_code == 143
    assert lite.preemption.notice is not None and lite.preemption.notice.detail == "SIGTERM"
    saved = torch.load(tmp_path / "last.ckpt", weights_only=True)
    assert saved["step"] == 6
    entry = saved["fault_tolerance"]
    assert entry["reason"] == "preemption" and entry["global_step"] == 6
    assert entry["notice"]["step"] == 5 and entry["notice"]["source"] == "signal"  # during 6
    assert "notice at step 5 (SIGTERM from signal)" in caplog.text
    assert "checkpoint committed in" in caplog.text and "saved " in caplog.text
    beat = lost_work.read_heartbeat(str(tmp_path))  # beside the checkpoint
    assert beat is not None and beat["step"] == 6 and beat["preemption"]["checkpoint_step"] == 6

    caplog.clear()
    logger = CSVLogger(tmp_path, name="logs")
    again = fulmen.Lite(accelerator="cpu", devices=1, loggers=[logger])
    resumed = again.launch(loop, tmp_path)
    assert resumed["step"] == STEPS and torch.equal(resumed["weights"], straight["weights"])
    record = again.preemption.resume
    assert record is not None and record.first_step_at is not None
    assert (record.checkpoint_step, record.failed_step, record.steps_redone) == (6, 6, 0)
    assert record.recovery_seconds is not None and record.recovery_seconds > 0
    assert record.preemption is not None and record.preemption["source"] == "signal"
    assert "resumed from " in caplog.text and "0 step(s) (0.0 s) redone" in caplog.text
    rows = (Path(logger.log_dir) / "metrics.csv").read_text()
    assert "fault_tolerance/steps_redone" in rows and "fault_tolerance/recovery_seconds" in rows
    later = torch.load(tmp_path / "last.ckpt", weights_only=True)["fault_tolerance"]
    assert later["reason"] == "periodic" and later["global_step"] == STEPS
    assert [r["checkpoint_step"] for r in later["resumes"]] == [6]


def test_lost_work_after_a_crash_is_counted_on_load(tmp_path, caplog):
    caplog.set_level("WARNING", logger="fulmen")
    with pytest.raises(RuntimeError, match="the node died"):
        fulmen.Lite(accelerator="cpu", devices=1).launch(loop, tmp_path, crash=7)
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    out = lite.launch(loop, tmp_path)
    assert out["step"] == STEPS
    record = lite.preemption.resume
    assert (record.checkpoint_step, record.failed_step, record.steps_redone) == (4, 7, 3)
    assert record.seconds_redone is not None and record.seconds_redone >= 0
    assert "resumed from " in caplog.text and "3 step(s) (" in caplog.text


def test_a_spot_notice_by_name_on_loopback(tmp_path, metadata, monkeypatch):
    monkeypatch.setenv("FULMEN_METADATA_ENDPOINT", metadata.url)
    lite = fulmen.Lite(accelerator="cpu", devices=1, plugins=["aws_spot"])
    (notice,) = lite.preemption_notices
    notice.interval = 0.02

    def reclaim() -> None:  # the provider schedules the interruption; wait until it is seen
        metadata.preempted.set()
        deadline = time.monotonic() + 10
        while lite.preemption.notice is None and time.monotonic() < deadline:
            time.sleep(0.01)

    with pytest.raises(SystemExit) as stopped:
        lite.launch(loop, tmp_path, 5, notify=reclaim)
    assert stopped.value.code == 143
    entry = torch.load(tmp_path / "last.ckpt", weights_only=True)["fault_tolerance"]
    assert entry["notice"]["source"] == "aws_spot" and entry["notice"]["step"] == 4
    assert entry["global_step"] == 5
    assert 110 <= entry["notice"]["window"] <= 120


def test_a_loop_that_never_asks_watches_nothing_and_says_so(tmp_path, caplog):
    caplog.set_level("WARNING", logger="fulmen")
    before = signal.getsignal(signal.SIGTERM)

    def plain(lite: fulmen.Lite) -> int:
        assert signal.getsignal(signal.SIGTERM) is before  # nothing armed without should_stop
        lite.save(tmp_path / "x.ckpt", {"step": 1, "w": torch.zeros(1)})
        return 1

    assert fulmen.Lite(accelerator="cpu", devices=1, plugins=["gcp_preemption"]).launch(plain)
    assert "fault_tolerance" not in torch.load(tmp_path / "x.ckpt", weights_only=True)
    assert not (tmp_path / lost_work.FILE).exists()
    assert "the loop never called lite.should_stop(), so no stop notice was watched" in \
        caplog.text


def test_exit_without_a_notice_is_an_error():
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    assert not lite.should_stop() and lite.preemption.global_step == 1
    assert lite.should_stop(step=9) is False and lite.preemption.global_step == 9
    with pytest.raises(FulmenError, match=r"no stop notice was agreed on; call it when "
                                          r"lite.should_stop\(\) returned True"):
        lite.preemption.exit()
    lite.preemption.close(failed=False)
