"""When the fit loop steps schedulers, validates and runs the sanity check, asserted against
Lightning 2.6's loops (``loops/training_epoch_loop.py``: ``advance``, ``on_advance_end``,
``_should_check_val_fx``, ``_update_learning_rates``; ``loops/fit_loop.py``:
``on_advance_end``; ``trainer.py``: ``_run_sanity_check``). Lightning's own tests of these are
ported in ``test_optimizers_lightning.py`` and ``callbacks/test_model_checkpoint_lightning.py``;
these cover the cases they leave out.

Deliberate differences: none.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

import pytest
import torch
from boring import BoringModel, RandomIterableDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen.callbacks import Callback, ModelCheckpoint

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}


class Recorder(BoringModel):
    """Records the learning rate at every batch start and the events of the loop."""

    def __init__(self, schedulers: Any = None) -> None:
        super().__init__()
        self.schedulers = schedulers
        self.lrs: list[float] = []
        self.events: list[Any] = []

    def on_train_batch_start(self, batch, batch_idx):
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])

    def on_validation_epoch_end(self):
        if not self.trainer.sanity_checking:
            self.events.append(("validation", self.current_epoch, self.global_step,
                                self.trainer.optimizers[0].param_groups[0]["lr"]))

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=1.0)
        if self.schedulers is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": self.schedulers(optimizer)}


def trainer(tmp_path: Any, **kwargs: Any) -> fulmen.Trainer:
    kwargs = {"default_root_dir": tmp_path, "enable_checkpointing": False, **QUIET, **kwargs}
    return fulmen.Trainer(**kwargs)


@pytest.mark.parametrize(("accumulate", "expected_steps"), [(1, 4), (2, 4)])
def test_step_interval_frequency_counts_the_epochs_batches(tmp_path, accumulate,
                                                           expected_steps):
    """Lightning: ``frequency`` of a step-interval scheduler counts ``batch_idx + 1`` of the
    running epoch at the batches that end an accumulation window. 5 batches, 2 epochs,
    frequency 2: batches 2 and 4 of each epoch (4 steps, not the 5 that counting optimizer steps
    across epochs gives); with accumulate 2, windows end at batches 2, 4 and 5, and 2 and 4 are
    due."""
    model = Recorder(lambda o: {"scheduler": torch.optim.lr_scheduler.StepLR(o, 1, 0.5),
                                "interval": "step", "frequency": 2})
    trainer(tmp_path, max_epochs=2, limit_train_batches=5, limit_val_batches=0,
            accumulate_grad_batches=accumulate).fit(model)
    assert model.lr_schedulers().last_epoch == expected_steps


def test_epoch_scheduler_steps_before_the_epochs_last_validation(tmp_path):
    """Lightning steps epoch-interval schedulers at the epoch's last batch, before
    ``on_train_batch_end`` and the validation that ends the epoch."""
    model = Recorder(lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5))
    trainer(tmp_path, max_epochs=2, limit_train_batches=4, limit_val_batches=1,
            val_check_interval=0.5, num_sanity_val_steps=0).fit(model)
    assert model.events == [("validation", 0, 2, 1.0), ("validation", 0, 4, 0.5),
                            ("validation", 1, 6, 0.5), ("validation", 1, 8, 0.25)]


def test_a_loader_of_unknown_length_validates_and_steps_at_its_end(tmp_path):
    """Lightning's fetcher looks one batch ahead: the last batch of a loader without a length
    steps the epoch schedulers, and validation runs after it."""

    class Model(Recorder):
        def train_dataloader(self):
            return DataLoader(RandomIterableDataset(32, 5))

    model = Model(lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5))
    trainer(tmp_path, max_epochs=2, limit_val_batches=2, num_sanity_val_steps=0).fit(model)
    assert model.events == [("validation", 0, 5, 0.5), ("validation", 1, 10, 0.25)]
    assert model.lrs == [1.0] * 5 + [0.5] * 5


def test_a_loader_of_unknown_length_ends_an_accumulation_window_at_its_last_batch(tmp_path):
    class Model(Recorder):
        def train_dataloader(self):
            return DataLoader(RandomIterableDataset(32, 5))

    model = Model()
    fit = trainer(tmp_path, max_epochs=1, limit_val_batches=0, accumulate_grad_batches=2)
    fit.fit(model)
    assert fit.global_step == 3  # batches 2, 4 and the last, 5


def test_batch_start_returning_minus_one_ends_the_epoch_like_its_last_batch(tmp_path):
    """Lightning: ``on_train_batch_start`` returning -1 marks the last batch; the epoch and step
    schedulers step as at a last batch, and a plateau scheduler at the epoch's end."""

    class Model(Recorder):
        def on_train_batch_start(self, batch, batch_idx):
            super().on_train_batch_start(batch, batch_idx)
            return -1 if batch_idx == 2 else None

    model = Model(lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5))
    trainer(tmp_path, max_epochs=2, limit_train_batches=5, limit_val_batches=0).fit(model)
    assert model.lrs == [1.0] * 3 + [0.5] * 3

    plateau = Model(lambda o: {"scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=0, threshold=1e9), "monitor": "m"})

    class Log(Callback):
        def on_train_epoch_end(self, trainer, pl_module):
            trainer.callback_metrics["m"] = torch.tensor(1.0)

    trainer(tmp_path, max_epochs=2, limit_train_batches=5, limit_val_batches=0,
            callbacks=[Log()]).fit(plateau)
    assert plateau.lrs == [1.0] * 3 + [0.1] * 3


def test_plateau_scheduler_steps_after_the_train_epoch_end_checkpoint(tmp_path):
    """Lightning steps epoch-interval plateau schedulers after the monitoring callbacks'
    ``on_train_epoch_end``: a checkpoint ModelCheckpoint saves there holds it unstepped."""
    states: list[int] = []

    class Saver(ModelCheckpoint):
        def on_train_epoch_end(self, trainer, pl_module):
            super().on_train_epoch_end(trainer, pl_module)
            states.append(trainer.lr_scheduler_configs[0].scheduler.last_epoch)

    class Model(Recorder):
        def training_step(self, batch, batch_idx):
            self.log("loss", float(batch_idx))
            return super().training_step(batch, batch_idx)

    model = Model(lambda o: {"scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(o),
                             "monitor": "loss"})
    fulmen.Trainer(default_root_dir=tmp_path, max_epochs=2, limit_train_batches=2,
                   limit_val_batches=0, callbacks=[Saver(dirpath=tmp_path, save_top_k=-1)], **QUIET).fit(model)
    assert states == [0, 1]
    saved = torch.load(tmp_path / "epoch=0-step=2.ckpt", weights_only=True)
    assert saved["lr_schedulers"][0]["last_epoch"] == 0


def test_reduce_on_plateau_reads_the_epochs_validation_metric(tmp_path):
    """ReduceLROnPlateau monitoring a validation metric steps at the epoch's end with that
    epoch's value (after the validation the epoch ends with)."""
    values = [3.0, 2.0, 2.0, 2.0]

    class Model(Recorder):
        def validation_step(self, batch, batch_idx):
            self.log("val_metric", values[self.current_epoch])

    model = Model(lambda o: {"scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=0, factor=0.5), "monitor": "val_metric"})
    trainer(tmp_path, max_epochs=4, limit_train_batches=1, limit_val_batches=1).fit(model)
    # epoch 0 sets the best; epoch 1 improves; epoch 2 does not: lr halves for epoch 3
    assert model.lrs == [1.0, 1.0, 1.0, 0.5]


def test_a_stop_asked_mid_epoch_validates_at_that_batch(tmp_path):
    """Lightning's ``_should_check_val_fx``: ``trainer.should_stop`` (with min_epochs/min_steps
    met) validates at that batch, before the loop stops."""

    class Model(Recorder):
        def on_train_batch_end(self, outputs, batch, batch_idx):
            if batch_idx == 2:
                self.trainer.should_stop = True

    model = Model()
    trainer(tmp_path, max_epochs=3, limit_train_batches=10, limit_val_batches=1,
            num_sanity_val_steps=0).fit(model)
    assert model.events == [("validation", 0, 3, 1.0)]


def test_no_sanity_check_when_resuming(tmp_path):
    """Lightning skips the sanity check when the fit loop restarts from a checkpoint."""
    sanity: list[int] = []

    class Model(BoringModel):
        def on_validation_start(self):
            if self.trainer.sanity_checking:
                sanity.append(self.current_epoch)

    first = trainer(tmp_path, max_epochs=1, limit_train_batches=2, limit_val_batches=1)
    first.fit(Model())
    first.save_checkpoint(tmp_path / "one.ckpt")
    trainer(tmp_path, max_epochs=2, limit_train_batches=2, limit_val_batches=1).fit(
        Model(), ckpt_path=tmp_path / "one.ckpt")
    assert sanity == [0]


@pytest.mark.parametrize("case", ["limit_train_batches=0", "resumed at max_epochs"])
def test_no_training_calls_no_train_start_or_end(tmp_path, case):
    """Lightning's ``FitLoop.skip``: with nothing to train, fit calls ``on_fit_start`` and
    ``on_fit_end`` but not ``on_train_start``/``on_train_end`` (the sanity check still runs)."""
    events: list[str] = []

    class Model(BoringModel):
        def on_fit_start(self):
            events.append("on_fit_start")

        def on_train_start(self):
            events.append("on_train_start")

        def on_train_end(self):
            events.append("on_train_end")

        def on_fit_end(self):
            events.append("on_fit_end")

        def on_validation_start(self):
            events.append("sanity" if self.trainer.sanity_checking else "validation")

    if case == "limit_train_batches=0":
        trainer(tmp_path, max_epochs=1, limit_train_batches=0, limit_val_batches=1).fit(Model())
        assert events == ["on_fit_start", "sanity", "on_fit_end"]
    else:
        first = trainer(tmp_path, max_epochs=1, limit_train_batches=1, limit_val_batches=0)
        first.fit(Model())
        first.save_checkpoint(tmp_path / "done.ckpt")
        events.clear()
        trainer(tmp_path, max_epochs=1, limit_train_batches=1, limit_val_batches=0).fit(
            Model(), ckpt_path=tmp_path / "done.ckpt")
        assert events == ["on_fit_start", "on_fit_end"]


@pytest.mark.parametrize("interval", ["00:00:00:01", {"seconds": 1}, timedelta(seconds=1)])
def test_time_based_val_check_interval_forms(interval):
    fit = fulmen.Trainer(val_check_interval=interval, **QUIET)
    assert fit.val_check_time_interval == 1.0 and fit.val_check_interval is None


def test_time_based_val_check_interval(tmp_path):
    interval = "00:00:00:01"
    """Lightning 2.6's ``val_check_interval`` as a duration: validation runs at the first batch
    end at least that long after the last evaluation ended (or training started), and not at
    the epoch's end otherwise; ModelCheckpoint then saves after validation only. (Lightning's
    test counts calls of a patched ``time.monotonic``; here the steps take real time.)"""
    ends: list[float] = []
    starts: list[float] = []

    class Model(Recorder):
        def training_step(self, batch, batch_idx):
            time.sleep(0.3)
            return super().training_step(batch, batch_idx)

        def on_train_start(self):
            ends.append(time.monotonic())

        def on_validation_start(self):
            starts.append(time.monotonic())

        def on_validation_end(self):
            ends.append(time.monotonic())

    model = Model()
    trainer(tmp_path, max_epochs=1, limit_train_batches=8, limit_val_batches=1,
            num_sanity_val_steps=0, val_check_interval=interval).fit(model)
    assert 1 <= len(model.events) <= 3  # 8 x 0.3 s: about every 4th batch
    for start, end in zip(starts, ends):
        assert start - end >= 1.0

    hourly = Recorder()
    trainer(tmp_path, max_epochs=2, limit_train_batches=3, limit_val_batches=1,
            num_sanity_val_steps=0, val_check_interval={"hours": 1}).fit(hourly)
    assert hourly.events == []  # not at the epochs' ends either


def test_time_based_val_check_interval_needs_a_duration_or_an_int_without_epochs():
    with pytest.raises(ValueError, match=re.escape(
            "`val_check_interval` should be an integer or a time-based duration (str "
            "'DD:HH:MM:SS', datetime.timedelta, or dict kwargs for timedelta) when "
            "`check_val_every_n_epoch=None`.")):
        fulmen.Trainer(val_check_interval=0.5, check_val_every_n_epoch=None)
    with pytest.raises(ValueError, match=r"val_check_interval='soon'\): use 'DD:HH:MM:SS'"):
        fulmen.Trainer(val_check_interval="soon")
