"""Stop notices as plugins and lost work as a number, in one process: a cloud spot notice served
by a real HTTP server on loopback, SIGTERM under the local environment, and the accounting a
resume logs, checkpoints and sends to the loggers."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from test_checkpoints import Scheduled, same_weights, shuffled, train
from tiny_models import lean

import fulmen
from fulmen import ConfigurationError
from fulmen.api.notice import Notice, PreemptionNotice
from fulmen.callbacks import ModelCheckpoint
from fulmen.fault_tolerance import lost_work
from fulmen.loggers import CSVLogger
from fulmen_environments.notices import AWSSpotNotice, AzureSpotNotice, GCPPreemptionNotice


@pytest.mark.parametrize("kind", [AWSSpotNotice, GCPPreemptionNotice, AzureSpotNotice])
def test_each_provider_notice_reads_its_endpoint(metadata, kind):
    notice = kind(endpoint=metadata.url)
    assert notice.check() is None and notice.per_node
    metadata.preempted.set()
    found = notice.check()
    assert found is not None and found.source == notice.name and found.action == "stop"
    assert found.signum == signal.SIGTERM
    expected = {"aws_spot": 120, "gcp_preemption": 30, "azure_spot": 30}[notice.name]
    assert found.window is not None and expected - 3 <= found.window <= expected


def test_a_cloud_notice_pickles_into_spawned_workers(metadata):
    notice = pickle.loads(pickle.dumps(AWSSpotNotice(endpoint=metadata.url, interval=0.02)))
    seen: list[Notice] = []
    notice.start(seen.append)
    metadata.preempted.set()
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    notice.stop()
    assert seen and seen[0].source == "aws_spot"


def test_notice_arguments_are_checked():
    with pytest.raises(ConfigurationError, match=r"endpoint='169.254.169.254'\): expected an "
                                                 r"http:// or https:// address"):
        AWSSpotNotice(endpoint="169.254.169.254")
    with pytest.raises(ConfigurationError, match="interval=0"):
        GCPPreemptionNotice(interval=0)
    with pytest.raises(ConfigurationError, match="action='pause'"):
        Notice("mine", "pause", 15)
    with pytest.raises(ConfigurationError, match=r"plugins=\[\.\.\.\] got 3 .* PreemptionNotice"):
        fulmen.Trainer(plugins=[3])


class StepAfterNotice(fulmen.Callback):
    """At ``step``, the provider schedules the interruption; the step waits until the notice
    thread has seen it, so the run stops at a known step (a real job would just go on)."""

    def __init__(self, server: Any, step: int) -> None:
        self.server, self.step = server, step

    def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
        if trainer.global_step == self.step:
            self.server.preempted.set()
            deadline = time.monotonic() + 10
            while trainer.run_state.preemption.received is None and time.monotonic() < deadline:
                time.sleep(0.01)


def test_a_spot_notice_on_loopback_checkpoints_exits_and_resumes_exactly(tmp_path, metadata,
                                                                         caplog):
    caplog.set_level("INFO", logger="fulmen")
    _, reference = train(3, tmp_path / "straight")
    notice = AWSSpotNotice(endpoint=metadata.url, interval=0.02)
    with pytest.raises(SystemExit) as stopped:
        train(3, tmp_path, plugins=[notice], callbacks=[StepAfterNotice(metadata, 7)])
    assert stopped.value.code == 128 + signal.SIGTERM  # a supervisor restarts the job
    assert notice.polls >= 2 and notice._thread is None  # polled, and stopped with the fit
    checkpoint = torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=True)
    assert checkpoint["global_step"] == 7
    entry = checkpoint["fault_tolerance"]
    assert entry["reason"] == "preemption" and entry["notice"]["source"] == "aws_spot"
    assert entry["notice"]["step"] == 7 and 115 <= entry["notice"]["window"] <= 120
    assert "SIGTERM (stop); aws_spot (polling http://127.0.0.1" in caplog.text
    assert "notice at step 7 (spot instance-action terminate at " in caplog.text
    assert "s window, checkpoint committed in " in caplog.text
    caplog.clear()
    metadata.preempted.clear()
    trainer, resumed = train(3, tmp_path, ckpt_path="last",
                             plugins=[AWSSpotNotice(endpoint=metadata.url, interval=0.02)])
    assert trainer.global_step == 15 and same_weights(reference, resumed)
    record = trainer.run_state.preemption.ledger.resume
    assert (record.checkpoint_step, record.failed_step, record.steps_redone) == (7, 7, 0)
    assert record.preemption["source"] == "aws_spot" and record.preemption["save_seconds"] > 0
    assert record.recovery_seconds is not None and record.recovery_seconds > 0
    assert "0 step(s) (0.0 s) redone since that checkpoint" in caplog.text


class CrashAt(fulmen.Callback):
    """A hard failure at ``step``, after the heartbeat saw it (a SIGKILL leaves the same)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
        if trainer.global_step == self.step:
            time.sleep(lost_work.HEARTBEAT_SECONDS * 3)
            raise RuntimeError("the node died")


def test_lost_work_after_a_crash_is_logged_checkpointed_and_inspected(tmp_path, caplog):
    caplog.set_level("WARNING", logger="fulmen")
    every_two = ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=2, save_top_k=-1)
    with pytest.raises(RuntimeError, match="the node died"), \
            pytest.warns(UserWarning, match="No checkpoint will be loaded"):
        # the restart-safe line from the first attempt: it keeps the heartbeat
        train(3, tmp_path, callbacks=[every_two, CrashAt(7)], ckpt_path="last")
    beat = lost_work.read_heartbeat(str(tmp_path))
    assert beat is not None and beat["step"] == 7
    logger = CSVLogger(tmp_path, name="logs")
    resumed_callback = ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=2,
                                       save_top_k=-1)
    trainer, _ = train(3, tmp_path, callbacks=[resumed_callback], ckpt_path="last",
                       logger=logger)
    assert trainer.ckpt_path == str(tmp_path / "ckpt" / "epoch=1-step=6.ckpt")
    assert "resumed from " in caplog.text and "1 step(s) (" in caplog.text
    rows = (Path(logger.log_dir) / "metrics.csv").read_text()
    assert "fault_tolerance/steps_redone" in rows and "fault_tolerance/recovery_seconds" in rows
    later = torch.load(tmp_path / "ckpt" / "epoch=2-step=14.ckpt", weights_only=True)
    (resume,) = later["fault_tolerance"]["resumes"]
    assert (resume["checkpoint_step"], resume["failed_step"], resume["steps_redone"]) == (6, 7, 1)
    assert resume["seconds_redone"] >= 0 and resume["recovery_seconds"] > 0
    shown = subprocess.run([sys.executable, "-m", "fulmen", "checkpoint", "inspect",
                            str(tmp_path / "ckpt" / "epoch=2-step=14.ckpt")],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "(periodic)" in shown.stdout and "lost work: 1 resume(s), 1 step(s) and" in shown.stdout
    assert "resumed from " in shown.stdout and "from the failure to the first step" in shown.stdout


def test_a_plain_local_run_writes_nothing_beside_its_checkpoints(tmp_path):
    every_two = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=2, save_top_k=1)
    train(1, tmp_path, callbacks=[every_two, CrashAt(-1)])
    assert not (tmp_path / lost_work.FILE).exists()


def test_sigterm_under_the_local_environment_saves_and_exits_143(tmp_path):
    class Term(fulmen.Callback):
        def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
            if trainer.global_step == 3:
                os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    fulmen.seed_everything(3)
    trainer = fulmen.Trainer(**lean(max_epochs=3, default_root_dir=tmp_path, callbacks=[Term()]))
    with pytest.raises(SystemExit) as stopped:
        trainer.fit(Scheduled(), shuffled())
    assert stopped.value.code == 143 and signal.getsignal(signal.SIGTERM) is before
    assert torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=True)["global_step"] == 3


class Announcer(PreemptionNotice):
    """A third-party notice: announces from a thread of its own, as a plugin would."""

    window = 5.0

    def __init__(self, at: threading.Event) -> None:
        self.at, self.stopped = at, 0

    def start(self, announce: Any) -> None:
        def watch() -> None:
            self.at.wait(10)
            announce(Notice(self.name, "requeue", int(signal.SIGUSR1), self.window, "mine"))

        threading.Thread(target=watch, daemon=True).start()

    def stop(self) -> None:
        self.stopped += 1


def test_an_environment_names_its_own_notices(tmp_path):
    from fulmen_environments import LocalEnvironment

    fired = threading.Event()

    class Cloudy(LocalEnvironment):
        requeued = 0

        def preemption_notices(self) -> Any:
            return [*super().preemption_notices(), source]

        def requeue(self) -> None:
            Cloudy.requeued += 1

    class Fire(fulmen.Callback):
        def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
            if trainer.global_step == 2:
                fired.set()
                while trainer.run_state.preemption.received is None:
                    time.sleep(0.005)

    source = Announcer(fired)
    fulmen.seed_everything(3)
    trainer = fulmen.Trainer(**lean(max_epochs=3, default_root_dir=tmp_path,
                                    plugins=[Cloudy()], callbacks=[Fire()]))
    with pytest.raises(SystemExit) as stopped:
        trainer.fit(Scheduled(), shuffled())
    assert stopped.value.code == 0 and Cloudy.requeued == 1 and source.stopped == 1
    notice = torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=True)["fault_tolerance"][
        "notice"]
    assert notice["source"] == "announcer" and notice["window"] == 5.0 and notice["step"] == 2
