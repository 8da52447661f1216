"""``trainer.strategy.connect(model)``: Lightning's ``Strategy.connect``.

Lightning's test suite has no test of it; written from its source (``strategy.model`` and
``strategy.lightning_module`` become the module, nothing is converted or moved) and checked
against Lightning 2.6.6. darts connects a module it loaded to a Trainer it did not fit, then
predicts with that Trainer: the module must still be set up (converted, moved) by the stage.
"""

from __future__ import annotations

import torch
from boring import BoringModel

import fulmen


def _trainer(tmp_path, **kwargs):
    return fulmen.Trainer(default_root_dir=tmp_path, logger=False, enable_progress_bar=False,
                          enable_model_summary=False, enable_checkpointing=False, **kwargs)


def test_connect_sets_the_module_without_setting_it_up(tmp_path):
    trainer = _trainer(tmp_path, precision="64-true")
    model = BoringModel()
    trainer.strategy.connect(model)
    assert trainer.strategy.model is model
    assert trainer.strategy.lightning_module is model
    assert trainer.strategy.module is model
    assert model.layer.weight.dtype == torch.float32  # not converted by connect
    assert not trainer.strategy.is_set_up(model)


def test_stage_after_connect_sets_the_module_up(tmp_path):
    """darts' flow: connect, then predict: the 64-bit run still casts the module."""
    trainer = _trainer(tmp_path, precision="64-true")
    model = BoringModel()
    trainer.strategy.connect(model)
    predictions = trainer.predict(model, dataloaders=model.val_dataloader())
    assert predictions is not None and predictions[0].dtype == torch.float64
    assert model.layer.weight.dtype == torch.float64
    assert trainer.strategy.is_set_up(model)


def test_fit_after_connect(tmp_path):
    trainer = _trainer(tmp_path, max_steps=2, limit_val_batches=1)
    model = BoringModel()
    trainer.strategy.connect(model)
    trainer.fit(model)
    assert trainer.global_step == 2
    assert trainer.strategy.lightning_module is model
