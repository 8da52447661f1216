"""``ModelCheckpoint(monitor=...)`` when the monitored metric was never logged.

Lightning 2.6's ``ModelCheckpoint._save_topk_checkpoint`` raises only once the validation loop has
run (``trainer.fit_loop.epoch_loop.val_loop._has_run``); before that (no validation at all, or
not yet) it warns and skips the monitored save. Lightning's test suite has no test of this rule;
these tests are written from its source and checked against Lightning 2.6.6 (same files, same
``best_model_path``, same raise). ``EarlyStopping(strict=True)`` has no such rule in Lightning: it
raises on a missing metric whether or not validation ran (tested in
test_early_stopping_lightning.py). Adapted name: ``MisconfigurationException`` ->
``fulmen.ConfigurationError``.
"""

from __future__ import annotations

from typing import Any

import pytest
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import ModelCheckpoint


class NoValidation(BoringModel):
    val_dataloader = None  # type: ignore[assignment]


def _trainer(tmp_path: Any, callback: ModelCheckpoint, **kwargs: Any) -> fulmen.Trainer:
    return fulmen.Trainer(default_root_dir=tmp_path, max_epochs=2, limit_train_batches=2,
                          callbacks=[callback], logger=False, enable_progress_bar=False,
                          enable_model_summary=False, **kwargs)


def test_monitor_without_validation_warns_and_skips(tmp_path):
    """No validation dataloader: every monitored save is skipped with a warning, fit finishes."""
    callback = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="val_loss", save_last=True)
    trainer = _trainer(tmp_path, callback)
    with pytest.warns(UserWarning, match=r"ModelCheckpoint\(monitor='val_loss'\)"):
        trainer.fit(NoValidation())
    assert trainer.state.finished
    assert callback.best_model_path == ""
    assert callback.best_model_score is None
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["last.ckpt"]


def test_monitor_with_validation_disabled_warns_and_skips(tmp_path):
    """``limit_val_batches=0`` (validation never runs) is the same: warned, skipped."""
    callback = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="val_loss")
    trainer = _trainer(tmp_path, callback, limit_val_batches=0)
    with pytest.warns(UserWarning, match="val_loss"):
        trainer.fit(BoringModel())
    assert callback.best_model_path == ""
    assert not (tmp_path / "ckpt").exists() or not list((tmp_path / "ckpt").iterdir())


def test_monitor_missing_after_validation_raises(tmp_path):
    """Validation ran and the metric is still not logged: the configuration is wrong."""
    callback = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="val_los")
    trainer = _trainer(tmp_path, callback, limit_val_batches=2)
    with pytest.raises(ConfigurationError, match=r"ModelCheckpoint\(monitor='val_los'\)"):
        trainer.fit(BoringModel())


def test_monitor_logged_in_training_without_validation_saves(tmp_path):
    """A metric logged in training is monitored without any validation."""
    class LogsTrainLoss(NoValidation):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            out = super().training_step(batch, batch_idx)
            self.log("train_loss", out["loss"])
            return out

    callback = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="train_loss")
    trainer = _trainer(tmp_path, callback)
    trainer.fit(LogsTrainLoss())
    assert callback.best_model_path.endswith(".ckpt")
    assert callback.best_model_score is not None
