"""A checkpoint config from a popular Lightning project template (lightning-hydra-template's
``model_checkpoint.yaml``, every key) is accepted as written and gives Lightning's file names."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch
import yaml
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import EarlyStopping, ModelCheckpoint

TEMPLATE = """
dirpath: {dirpath}
filename: "epoch_{{epoch:03d}}"
monitor: "val/acc"
verbose: False
save_last: True
save_top_k: 1
mode: "max"
auto_insert_metric_name: False
save_weights_only: False
every_n_train_steps: null
train_time_interval: null
every_n_epochs: null
save_on_train_epoch_end: null
"""

EARLY_STOPPING = """
monitor: "val/acc"
min_delta: 0.
patience: 100
verbose: False
mode: "max"
strict: True
check_finite: True
stopping_threshold: null
divergence_threshold: null
check_on_train_epoch_end: null
"""


class Accuracy(BoringModel):
    """val/acc per epoch: 0.1, 0.5, 0.3 (the best is epoch 1)."""

    def on_validation_epoch_end(self) -> None:
        self.log("val/acc", [0.1, 0.5, 0.3][self.current_epoch])


def test_hydra_template_config_gives_lightnings_file_names(tmp_path):
    config: dict[str, Any] = yaml.safe_load(TEMPLATE.format(dirpath=tmp_path / "checkpoints"))
    checkpoint = ModelCheckpoint(**config)
    stopper = EarlyStopping(**yaml.safe_load(EARLY_STOPPING))
    trainer = fulmen.Trainer(max_epochs=3, limit_train_batches=2, limit_val_batches=2,
                             callbacks=[checkpoint, stopper], logger=False,
                             enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Accuracy())
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["epoch_001.ckpt", "last.ckpt"]
    assert checkpoint.best_model_path == str(tmp_path / "checkpoints" / "epoch_001.ckpt")
    assert checkpoint.best_model_score == pytest.approx(0.5)
    # as in Lightning 2.6, last.ckpt is refreshed whenever a checkpoint is saved (epoch 2 was not)
    assert torch.load(checkpoint.last_model_path, weights_only=True)["epoch"] == 1


def test_contradictory_options_echo_the_configuration_and_the_fix():
    from datetime import timedelta

    # Lightning accepts it (and keeps no monitored checkpoint): a warning with the fix
    with pytest.warns(RuntimeWarning, match=r"ModelCheckpoint\(monitor='val/acc', save_top_k=0\)"
                      r": save_top_k=0 keeps no monitored checkpoint.*Drop monitor"):
        ModelCheckpoint(monitor="val/acc", save_top_k=0)
    with pytest.raises(ConfigurationError, match=r"every_n_train_steps=10.*train_time_interval="
                                                 r"0:01:00.*mutually exclusive: keep one trigger"):
        ModelCheckpoint(every_n_train_steps=10, train_time_interval=timedelta(minutes=1))
    # Lightning takes save_last by its truth: a warning with the value to pass
    with pytest.warns(UserWarning, match=r"save_last='yes'\): expected True, False, None or "
                                         r"'link'; taken as True"):
        assert ModelCheckpoint(save_last="yes").save_last is True
