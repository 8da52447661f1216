"""ModelCheckpoint, EarlyStopping, LearningRateMonitor, ModelSummary and the progress bar."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import (
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
    ModelSummary,
    TQDMProgressBar,
)
from fulmen.loggers import CSVLogger


class Scripted(TinyModule):
    """Logs a scripted validation metric per epoch."""

    def __init__(self, values: list[float]) -> None:
        super().__init__()
        self.values = values

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("score", self.values[self.current_epoch])


def run(callbacks: list[Any], values: list[float], **flags: Any) -> fulmen.Trainer:
    trainer = fulmen.Trainer(callbacks=callbacks, **lean(
        max_epochs=len(values), enable_checkpointing=True, **flags))
    trainer.fit(Scripted(values), loader(n=16), loader(n=8))
    return trainer


def test_top_k_by_metric_with_filename_template(tmp_path):
    callback = ModelCheckpoint(dirpath=tmp_path, monitor="score", mode="max", save_top_k=2,
                               filename="{epoch}-{score:.2f}")
    run([callback], [0.1, 0.5, 0.3, 0.9, 0.2])
    assert sorted(os.listdir(tmp_path)) == ["epoch=1-score=0.50.ckpt", "epoch=3-score=0.90.ckpt"]
    assert callback.best_model_path == str(tmp_path / "epoch=3-score=0.90.ckpt")
    assert callback.best_model_score == pytest.approx(0.9)
    assert torch.load(callback.best_model_path, weights_only=True)["epoch"] == 3


def test_save_last_and_every_n_train_steps(tmp_path):
    callback = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1,
                               save_last=True)
    run([callback], [0.0, 0.0])  # 2 batches per epoch: steps 3
    assert sorted(os.listdir(tmp_path)) == ["epoch=1-step=3.ckpt", "last.ckpt"]
    assert torch.load(tmp_path / "last.ckpt", weights_only=True)["global_step"] == 3


def test_default_checkpoint_goes_under_the_logger_version(tmp_path):
    trainer = fulmen.Trainer(max_epochs=2, default_root_dir=tmp_path, enable_progress_bar=False,
                             enable_model_summary=False, logger=CSVLogger(tmp_path))
    trainer.fit(TinyModule(), loader(n=16))
    assert os.listdir(tmp_path / "fulmen_logs" / "version_0" / "checkpoints") == [
        "epoch=1-step=4.ckpt"]


def test_monitoring_a_metric_that_was_never_logged_lists_the_logged_ones(tmp_path):
    with pytest.raises(ConfigurationError, match=r"ModelCheckpoint\(monitor='val_los'\) found no "
                       r"metric named 'val_los'. Logged metrics: \['score', 'train_loss'\]"):
        run([ModelCheckpoint(dirpath=tmp_path, monitor="val_los")], [0.1])
    with pytest.raises(ConfigurationError, match=r"EarlyStopping\(monitor='acc'\) found no "):
        run([EarlyStopping(monitor="acc")], [0.1])


def test_checkpoint_filename_with_unknown_field(tmp_path):
    """Lightning writes a name that is not logged as 0; fulmen too, with a warning."""
    with pytest.warns(RuntimeWarning, match=r"uses \{acc\}, which is not logged \(yet\), so it "
                      r"is written as acc=0 \(Lightning's rule\). Logged: \['epoch', 'score'"):
        run([ModelCheckpoint(dirpath=tmp_path, filename="{acc}")], [0.1])
    assert os.listdir(tmp_path) == ["acc=0.ckpt"]


def test_early_stopping_with_patience():
    stopper = EarlyStopping(monitor="score", patience=2)
    trainer = run([stopper], [1.0, 0.5, 0.6, 0.7, 0.1, 0.1, 0.1])
    assert trainer.current_epoch == 4 and stopper.stopped_epoch == 3
    assert "did not improve" in stopper.stop_reason


def test_early_stopping_thresholds_and_non_finite():
    assert run([EarlyStopping(monitor="score", stopping_threshold=0.2)],
               [1.0, 0.1, 0.0, 0.0]).current_epoch == 2
    assert run([EarlyStopping(monitor="score", divergence_threshold=5.0)],
               [1.0, 9.0, 0.0, 0.0]).current_epoch == 2
    assert run([EarlyStopping(monitor="score")], [1.0, float("nan"), 0.0]).current_epoch == 2


def test_early_stopping_state_is_saved_and_restored(tmp_path):
    stopper = EarlyStopping(monitor="score", patience=5)
    trainer = run([stopper], [1.0, 2.0])
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    state = torch.load(tmp_path / "a.ckpt", weights_only=True)["callbacks"][stopper.state_key]
    assert state["wait_count"] == 1 and state["best_score"] == 1.0


@pytest.mark.parametrize(("flag", "message"), [
    ({"mode": "up"}, "use 'min' or 'max'"), ({"save_top_k": -2}, "save_top_k=-2"),
    ({"save_top_k": 3}, "set monitor='...' too"), ({"every_n_epochs": -1}, "every_n_epochs=-1")])
def test_bad_checkpoint_arguments(flag, message):
    with pytest.raises(ConfigurationError, match=message):
        ModelCheckpoint(**flag)


def test_learning_rate_monitor_logs_each_group(tmp_path):
    class TwoGroups(TinyModule):
        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD([{"params": self.net[0].parameters(), "lr": 0.1},
                                         {"params": self.net[3].parameters(), "lr": 0.01}],
                                        momentum=0.9)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)]

    monitor = LearningRateMonitor(logging_interval="epoch", log_momentum=True)
    logger = CSVLogger(tmp_path)
    fulmen.Trainer(callbacks=[monitor], **lean(max_epochs=2, logger=logger)).fit(
        TwoGroups(), loader(n=16))
    assert monitor.lrs == {"lr-SGD/pg1": [0.1, 0.05], "lr-SGD/pg2": [0.01, 0.005]}
    assert monitor.last_momentum_values == {"lr-SGD/pg1-momentum": 0.9,
                                            "lr-SGD/pg2-momentum": 0.9}
    assert "lr-SGD/pg1" in Path(logger.metrics_file_path).read_text().splitlines()[0]
    with pytest.raises(ConfigurationError, match="Cannot use `LearningRateMonitor` callback"):
        fulmen.Trainer(callbacks=[LearningRateMonitor()], **lean(max_epochs=1)).fit(
            TinyModule(), loader())


def test_model_summary_logs_params_and_size(caplog):
    with caplog.at_level("INFO", logger="fulmen"):
        fulmen.Trainer(callbacks=[ModelSummary()], **lean(max_epochs=1)).fit(TinyModule(),
                                                                             loader())
    out = caplog.text  # through the `fulmen` logger
    assert re.search(r"0 \| net\s+\| Sequential \| 178", out)
    assert "178       Trainable params" in out
    assert "0.001     Total estimated model params size (MB)" in out


def test_progress_bar_logs_one_line_per_epoch_without_a_terminal(caplog):
    caplog.set_level("INFO", logger="fulmen")
    trainer = fulmen.Trainer(callbacks=[TQDMProgressBar(interactive=False)],
                             **lean(max_epochs=2, enable_progress_bar=True))
    trainer.fit(TinyModule(), loader(), loader())
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Epoch")]
    assert lines[0].startswith("Epoch 0: 8 steps, ")
    assert "train_loss=" in lines[0] and "val_acc=" in lines[0]
    assert len(lines) == 2


def test_progress_bar_draws_bars_on_a_terminal(capsys):
    bar = TQDMProgressBar(interactive=True)
    bar.min_refresh_seconds = 0
    trainer = fulmen.Trainer(callbacks=[bar], **lean(max_epochs=1, enable_progress_bar=True))
    trainer.fit(TinyModule(), loader(), loader())
    out = capsys.readouterr().out
    assert "Epoch 0: 100%" in out and "8/8" in out and "train_loss=" in out


def test_enable_progress_bar_false_means_no_output(capsys):
    fulmen.Trainer(**lean(max_epochs=1)).fit(TinyModule(), loader())
    assert capsys.readouterr().out == ""


def test_configure_callbacks_adds_and_replaces():
    class WithCallbacks(TinyModule):
        def configure_callbacks(self) -> Any:
            return [EarlyStopping(monitor="train_loss", patience=100)]

    trainer = fulmen.Trainer(callbacks=[EarlyStopping(monitor="x")], **lean(max_epochs=1))
    trainer.fit(WithCallbacks(), loader())
    assert [c.monitor for c in trainer.callbacks if isinstance(c, EarlyStopping)] == [
        "train_loss"]
