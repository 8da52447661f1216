"""Lightning's ``tests_pytorch/callbacks/test_timer.py`` and the ``OnExceptionCheckpoint`` tests,
ported to fulmen.

Not ported: ``test_trainer_flag`` (fulmen's ``Trainer(max_time=)`` stops the loop itself rather
than adding a ``Timer``). ``test_timer_duration_min_steps_override`` runs 2 batches an epoch
(Lightning: the boring model's 64). Lightning mocks ``time`` in ``test_timer_time_remaining``; here
the clock is real and the checks allow for it.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta

import pytest
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import ModelCheckpoint, OnExceptionCheckpoint, Timer

Trainer = fulmen.Trainer
QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        (None, None),
        ("00:00:00:22", timedelta(seconds=22)),
        ("12:34:56:65", timedelta(days=12, hours=34, minutes=56, seconds=65)),
        (timedelta(weeks=52, milliseconds=1), timedelta(weeks=52, milliseconds=1)),
        ({"weeks": 52, "days": 1}, timedelta(weeks=52, days=1)),
    ],
)
def test_timer_parse_duration(duration, expected):
    timer = Timer(duration=duration)
    assert (timer.time_remaining() == expected is None) or (timer.time_remaining() == expected.total_seconds())


@pytest.mark.parametrize("duration", ["6:00:00", "60 minutes"])
def test_timer_parse_duration_misconfiguration(duration):
    with pytest.raises(ConfigurationError, match="format DD:HH:MM:SS"):
        Timer(duration=duration)


def test_timer_interval_choice():
    Timer(duration=timedelta(), interval="step")
    Timer(duration=timedelta(), interval="epoch")
    with pytest.raises(ConfigurationError, match="Unsupported parameter value"):
        Timer(duration=timedelta(), interval="invalid")


def test_timer_time_remaining():
    """The timer tracks the elapsed and remaining time (a real clock: Lightning mocks it)."""
    timer = Timer(duration=timedelta(seconds=10))
    assert timer.time_remaining() == 10 and timer.time_elapsed() == 0
    assert timer.start_time() is None
    timer.on_train_start(trainer=None, module=None)
    assert timer.start_time() is not None
    time.sleep(0.05)
    assert 0.05 <= timer.time_elapsed() < 5
    assert 5 < timer.time_remaining() <= 9.95


def test_timer_stops_training(tmp_path, caplog):
    """Test that the timer stops training before reaching max_epochs."""
    timer = Timer(duration=timedelta(milliseconds=100))
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1000, callbacks=[timer], **QUIET)
    with caplog.at_level(logging.INFO, logger="fulmen"):
        trainer.fit(BoringModel())
    assert trainer.global_step > 1
    assert trainer.current_epoch < 999
    assert "Time limit reached." in caplog.text
    assert "Signaling Trainer to stop." in caplog.text


@pytest.mark.parametrize("interval", ["step", "epoch"])
def test_timer_zero_duration_stop(tmp_path, interval):
    """Test that the timer stops training immediately after the first check occurs."""
    timer = Timer(duration=timedelta(0), interval=interval)
    trainer = Trainer(default_root_dir=tmp_path, callbacks=[timer], **QUIET)
    trainer.fit(BoringModel())
    assert trainer.global_step == 0
    assert trainer.current_epoch == 0


def test_timer_duration_min_epochs_override(tmp_path):
    timer = Timer(duration=timedelta(0))
    trainer = Trainer(default_root_dir=tmp_path, callbacks=[timer], min_epochs=2, limit_train_batches=2,
                      limit_val_batches=1, **QUIET)
    trainer.fit(BoringModel())
    assert trainer.current_epoch >= 2
    assert timer.time_elapsed() > 0


@pytest.mark.parametrize(("min_steps", "min_epochs"), [(None, 2), (3, None), (3, 2)])
def test_timer_duration_min_steps_override(tmp_path, min_steps, min_epochs):
    timer = Timer(duration=timedelta(0))
    trainer = Trainer(default_root_dir=tmp_path, callbacks=[timer], min_steps=min_steps,
                      min_epochs=min_epochs, limit_train_batches=2, limit_val_batches=1, **QUIET)
    trainer.fit(BoringModel())
    if min_epochs:
        assert trainer.current_epoch >= min_epochs
    if min_steps:
        assert trainer.global_step >= min_steps - 1
    assert timer.time_elapsed() > 0


def test_timer_resume_training(tmp_path):
    """Test that the timer can resume together with the Trainer."""
    model = BoringModel()
    timer = Timer(duration=timedelta(milliseconds=200))
    checkpoint_callback = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1)
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=100, callbacks=[timer, checkpoint_callback], **QUIET)
    trainer.fit(model)
    assert not timer._offset
    assert timer.time_remaining() <= 0
    assert trainer.current_epoch < 99
    saved_global_step = trainer.global_step

    # resume training (with depleted timer)
    timer = Timer(duration=timedelta(milliseconds=200))
    trainer = Trainer(default_root_dir=tmp_path, callbacks=timer, **QUIET)
    trainer.fit(model, ckpt_path=checkpoint_callback.best_model_path)
    assert timer._offset > 0
    assert trainer.global_step == saved_global_step


def test_timer_track_stages(tmp_path):
    """Test that the timer tracks time also for other stages (train/val/test)."""
    model = BoringModel()
    timer = Timer()
    trainer = Trainer(default_root_dir=tmp_path, max_steps=5, callbacks=[timer], **QUIET)
    trainer.fit(model)
    assert timer.time_elapsed() == timer.time_elapsed("train") > 0
    assert timer.time_elapsed("validate") > 0
    assert timer.time_elapsed("test") == 0
    trainer.test(model, verbose=False)
    assert timer.time_elapsed("test") > 0


# ---------------------------------------------------------------- OnExceptionCheckpoint


def test_on_exception_checkpoint_filename():
    with pytest.raises(ConfigurationError, match="filename cannot be empty"):
        OnExceptionCheckpoint(".", filename="")
    assert OnExceptionCheckpoint("ckpts").ckpt_path == os.path.join("ckpts", "on_exception.ckpt")


def test_on_exception_checkpoint_is_written_on_failure_and_removed_on_success(tmp_path):
    class Fails(BoringModel):
        def training_step(self, batch, batch_idx):
            if self.global_step == 3:
                raise RuntimeError("Trouble!")
            return super().training_step(batch, batch_idx)

    callback = OnExceptionCheckpoint(tmp_path)
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=5, callbacks=[callback],
                      enable_checkpointing=False, **QUIET)
    with pytest.raises(RuntimeError, match="Trouble!"):
        trainer.fit(Fails())
    assert os.path.isfile(callback.ckpt_path)
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=5, callbacks=[callback],
                      enable_checkpointing=False, **QUIET)
    trainer.fit(BoringModel(), ckpt_path=callback.ckpt_path)
    assert trainer.global_step == 5
    assert not os.path.exists(callback.ckpt_path)
