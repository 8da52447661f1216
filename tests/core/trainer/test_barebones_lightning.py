"""Lightning's ``tests_pytorch/trainer/flags/test_barebones.py``, ported to fulmen, with a fit in
barebones mode (Lightning's other tests use ``barebones=True`` only to keep runs quiet, as
``test_strict_loading`` in ``trainer/connectors/test_checkpoint_connector.py``, whose fit and
resume part is here).

Adapted names: ``lightning.pytorch.Trainer`` -> ``fulmen.Trainer``, ``trainer._detect_anomaly``
-> ``trainer.detect_anomaly``, ``PassThroughProfiler`` from ``fulmen.profilers``. Lightning
raises ``ValueError``; fulmen's ``ConfigurationError`` is one, with the same message.

Deliberate differences: none.
"""

from __future__ import annotations

import logging
import os

import pytest
import torch
from boring import BoringModel

from fulmen import ConfigurationError, Trainer
from fulmen.callbacks import ModelSummary
from fulmen.profilers import PassThroughProfiler


def test_barebones_disables_logging():
    pl_module = BoringModel()
    trainer = Trainer(barebones=True)
    pl_module._trainer = trainer

    with pytest.warns(match=r"barebones=True\)` is configured"):
        pl_module.log("foo", 1.0)
    with pytest.warns(match=r"barebones=True\)` is configured"):
        pl_module.log_dict({"foo": 1.0})


def test_barebones_argument_selection(caplog):
    with caplog.at_level(logging.INFO):
        trainer = Trainer(barebones=True)

    assert "running in `Trainer(barebones=True)` mode" in caplog.text
    assert trainer.barebones
    assert not trainer.checkpoint_callbacks
    assert not trainer.loggers
    assert not trainer.progress_bar_callback
    assert not any(isinstance(cb, ModelSummary) for cb in trainer.callbacks)
    assert not trainer.log_every_n_steps
    assert not trainer.num_sanity_val_steps
    assert not trainer.fast_dev_run
    assert not trainer.detect_anomaly
    assert isinstance(trainer.profiler, PassThroughProfiler)


def test_barebones_raises():
    with pytest.raises(ValueError, match=r"enable_checkpointing=True\)` was passed"):
        Trainer(barebones=True, enable_checkpointing=True)
    with pytest.raises(ValueError, match=r"logger=True\)` was passed"):
        Trainer(barebones=True, logger=True)
    with pytest.raises(ValueError, match=r"enable_progress_bar=True\)` was passed"):
        Trainer(barebones=True, enable_progress_bar=True)
    with pytest.raises(ValueError, match=r"enable_model_summary=True\)` was passed"):
        Trainer(barebones=True, enable_model_summary=True)
    with pytest.raises(ValueError, match=r"log_every_n_steps=1\)` was passed"):
        Trainer(barebones=True, log_every_n_steps=1)
    with pytest.raises(ValueError, match=r"num_sanity_val_steps=1\)` was passed"):
        Trainer(barebones=True, num_sanity_val_steps=1)
    with pytest.raises(ValueError, match=r"fast_dev_run=1\)` was passed"):
        Trainer(barebones=True, fast_dev_run=1)
    with pytest.raises(ValueError, match=r"detect_anomaly=True\)` was passed"):
        Trainer(barebones=True, detect_anomaly=True)
    with pytest.raises(ConfigurationError, match=r"profiler='simple'\)` was passed"):
        Trainer(barebones=True, profiler="simple")


def test_barebones_accepts_what_it_turns_off_anyway():
    """Lightning accepts the off values (and None) next to barebones=True."""
    trainer = Trainer(barebones=True, enable_checkpointing=False, logger=False,
                      enable_progress_bar=False, enable_model_summary=False,
                      log_every_n_steps=0, num_sanity_val_steps=0, fast_dev_run=False,
                      detect_anomaly=False, profiler=None)
    assert trainer.barebones


def test_barebones_fit_writes_nothing_and_skips_the_sanity_check(tmp_path, caplog):
    sanity: list[bool] = []

    class Model(BoringModel):
        def training_step(self, batch, batch_idx):
            out = super().training_step(batch, batch_idx)
            if batch_idx == 0:
                with pytest.warns(match=r"barebones=True\)` is configured"):
                    self.log("loss", out["loss"])
            return out

        def validation_step(self, batch, batch_idx):
            sanity.append(self.trainer.sanity_checking)
            return super().validation_step(batch, batch_idx)

    trainer = Trainer(default_root_dir=tmp_path, barebones=True, max_epochs=2,
                      limit_train_batches=3, limit_val_batches=2)
    with caplog.at_level(logging.INFO):
        trainer.fit(Model())
    assert "`Trainer(barebones=True)` started running" in caplog.text
    assert trainer.global_step == 6
    assert sanity == [False] * 4  # two validations, no sanity check
    assert not trainer.callback_metrics
    assert os.listdir(tmp_path) == []  # no checkpoint, no log folder


@pytest.mark.parametrize(("strict_loading", "expected"), [
    (None, True), (True, True), (False, False)])
def test_strict_loading(strict_loading, expected, tmp_path):
    """Test that the Trainer respects the `Module.strict_loading` setting (an unexpected key in
    the checkpoint is an error unless strict_loading is False)."""
    model = BoringModel()
    trainer = Trainer(default_root_dir=tmp_path, barebones=True, max_steps=1)
    trainer.fit(model)
    trainer.save_checkpoint(tmp_path / "checkpoint.ckpt")
    checkpoint = torch.load(tmp_path / "checkpoint.ckpt", weights_only=True)
    checkpoint["state_dict"]["unexpected"] = torch.zeros(1)
    torch.save(checkpoint, tmp_path / "extra.ckpt")

    model = BoringModel()
    model.strict_loading = strict_loading
    trainer = Trainer(default_root_dir=tmp_path, barebones=True, max_steps=2)
    if expected:
        with pytest.raises(Exception, match="unexpected"):
            trainer.fit(model, ckpt_path=tmp_path / "extra.ckpt")
    else:
        trainer.fit(model, ckpt_path=tmp_path / "extra.ckpt")
        assert trainer.global_step == 2


def test_load_from_checkpoint_follows_strict_loading(tmp_path):
    """``load_from_checkpoint`` without ``strict`` takes the module's ``strict_loading``
    (Lightning's ``_load_state``); both given and different is an error."""
    from fulmen.errors import ConfigurationError

    class Lenient(BoringModel):
        def __init__(self):
            super().__init__()
            self.strict_loading = False

    trainer = Trainer(default_root_dir=tmp_path, barebones=True, max_steps=1)
    trainer.fit(BoringModel())
    trainer.save_checkpoint(tmp_path / "checkpoint.ckpt")
    checkpoint = torch.load(tmp_path / "checkpoint.ckpt", weights_only=True)
    checkpoint["state_dict"]["unexpected"] = torch.zeros(1)
    torch.save(checkpoint, tmp_path / "extra.ckpt")

    with pytest.raises(ConfigurationError, match="unexpected"):
        BoringModel.load_from_checkpoint(tmp_path / "extra.ckpt")
    assert isinstance(Lenient.load_from_checkpoint(tmp_path / "extra.ckpt"), Lenient)
    with pytest.raises(ConfigurationError, match="conflicts with"):
        Lenient.load_from_checkpoint(tmp_path / "extra.ckpt", strict=True)
