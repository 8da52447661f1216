"""Preemption in one process: an environment that declares signals gets a checkpoint, a clean exit
and a resume; the previous signal handlers come back afterwards."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import torch
from test_checkpoints import same_weights, shuffled, train
from tiny_models import lean

import fulmen
from fulmen import ConfigurationError
from fulmen_environments import LocalEnvironment


class Preemptible(LocalEnvironment):
    """The local machine, with a scheduler that sends SIGUSR2 (stop) and SIGUSR1 (requeue)."""

    def __init__(self, restarts: int = 0) -> None:
        super().__init__()
        self.restarts, self.requeued = restarts, 0

    def preemption_signals(self) -> Mapping[int, Any]:
        return {signal.SIGUSR1: "requeue", signal.SIGUSR2: "stop"}

    def requeue(self) -> None:
        self.requeued += 1

    def restart_count(self) -> int:
        return self.restarts


class SignalAt(fulmen.Callback):
    def __init__(self, step: int, sig: int) -> None:
        self.step, self.sig = step, sig

    def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), self.sig)


def run(root: Path, env: Preemptible, callbacks: list[Any], **fit: Any) -> fulmen.Trainer:
    fulmen.seed_everything(3)
    from test_checkpoints import Scheduled

    trainer = fulmen.Trainer(**lean(max_epochs=3, default_root_dir=root, plugins=[env],
                                    callbacks=callbacks))
    trainer.fit(Scheduled(), shuffled(), **fit)
    return trainer


@pytest.mark.parametrize(("sig", "code", "requeued"), [(signal.SIGUSR1, 0, 1),
                                                        (signal.SIGUSR2, 128 + 12, 0)])
def test_signal_checkpoints_exits_and_restores_handlers(tmp_path, caplog, sig, code, requeued):
    caplog.set_level("INFO", logger="fulmen")
    before = signal.getsignal(sig)
    env = Preemptible()
    with pytest.raises(SystemExit) as exit_info:
        run(tmp_path, env, [SignalAt(7, sig)])
    assert exit_info.value.code == code and env.requeued == requeued
    assert signal.getsignal(sig) is before  # the Trainer's handler is gone again
    checkpoint = torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=True)
    assert checkpoint["global_step"] == 7 and checkpoint["loops"]["fit"]["batches_done"] == 2
    err = caplog.text  # through the `fulmen` logger
    assert f"{signal.Signals(sig).name} received; saved {tmp_path / 'hpc_ckpt_1.ckpt'}" in err


def test_a_restarted_job_resumes_from_the_preemption_checkpoint_exactly(tmp_path):
    _, reference = train(3, tmp_path / "straight")
    with pytest.raises(SystemExit):
        run(tmp_path, Preemptible(), [SignalAt(7, signal.SIGUSR2)])
    with pytest.raises(SystemExit):  # preempted again: numbered, never overwritten
        run(tmp_path, Preemptible(restarts=1), [SignalAt(9, signal.SIGUSR2)])
    assert sorted(p.name for p in tmp_path.glob("hpc_ckpt_*")) == ["hpc_ckpt_1.ckpt",
                                                                   "hpc_ckpt_2.ckpt"]
    trainer = run(tmp_path, Preemptible(restarts=2), [])
    assert trainer.global_step == 15
    assert same_weights(reference, trainer.module)


def test_first_start_ignores_old_checkpoints_and_no_signal_means_no_handler(tmp_path):
    with pytest.raises(SystemExit):
        run(tmp_path, Preemptible(), [SignalAt(7, signal.SIGUSR2)])
    trainer = run(tmp_path, Preemptible(restarts=0), [])  # a new job, not a restart
    assert trainer.global_step == 15
    handler = signal.getsignal(signal.SIGUSR2)
    fulmen.Trainer(**lean(max_epochs=1)).fit(*_plain())  # the local environment: no signals
    assert signal.getsignal(signal.SIGUSR2) is handler


def _plain() -> tuple[Any, Any]:
    from tiny_models import TinyModule, loader

    return TinyModule(), loader()


def test_ckpt_path_hpc_and_last(tmp_path):
    trainer = fulmen.Trainer(**lean(max_epochs=1, default_root_dir=tmp_path))
    with pytest.raises(ConfigurationError, match=r"ckpt_path='hpc': no hpc checkpoint is known "
                                                 r"\(no hpc_ckpt_<n>.ckpt in default_root_dir"):
        trainer.fit(*_plain(), ckpt_path="hpc")
    with pytest.warns(UserWarning, match="No checkpoint will be loaded"):  # starts fresh
        trainer.fit(*_plain(), ckpt_path="last")
    assert trainer.global_step == 8 and trainer.ckpt_path is None
    trainer = fulmen.Trainer(**lean(max_epochs=1, default_root_dir=tmp_path))
    with pytest.raises(SystemExit):
        run(tmp_path, Preemptible(), [SignalAt(4, signal.SIGUSR2)])
    for path in ("hpc", "last"):  # the newest checkpoint is the preemption one
        resumed = run(tmp_path, Preemptible(), [], ckpt_path=path)
        assert resumed.global_step == 15
