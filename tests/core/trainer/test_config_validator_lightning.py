"""Port of Lightning's ``tests_pytorch/trainer/test_config_validator.py::test_legacy_epoch_end_
hooks``: a Lightning 1.x ``training_epoch_end`` / ``validation_epoch_end`` / ``test_epoch_end``
is refused before the stage starts, never ignored in silence.

Deliberate differences (also in docs/migrating.md):

- The error is ``fulmen.errors.LegacyHookError``, a ``NotImplementedError`` (as Lightning raises)
  and a ``FulmenError``; its message adds how to keep the outputs and that ``fulmen migrate``
  rewrites the hook.
- Lightning's test calls the private ``__verify_train_val_loop_configuration`` with a ``Mock``
  trainer; here the real ``fit``/``validate``/``test`` calls are checked, and that nothing ran
  (no process started, no hook called).
"""

from __future__ import annotations

import pytest
from boring import BoringModel

import fulmen
from fulmen.errors import FulmenError, LegacyHookError


class TrainingEpochEndModel(BoringModel):
    def training_epoch_end(self, outputs):
        pass


class ValidationEpochEndModel(BoringModel):
    def validation_epoch_end(self, outputs):
        pass


class TestEpochEndModel(BoringModel):
    __test__ = False

    def test_epoch_end(self, outputs):
        pass


def _trainer(tmp_path) -> fulmen.Trainer:
    return fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=1,
                          limit_val_batches=1, limit_test_batches=1, logger=False,
                          enable_checkpointing=False, enable_progress_bar=False,
                          enable_model_summary=False)


def test_legacy_epoch_end_hooks(tmp_path) -> None:
    trainer = _trainer(tmp_path)
    with pytest.raises(NotImplementedError, match=r"training_epoch_end` has been removed in v2.0"):
        trainer.fit(TrainingEpochEndModel())
    with pytest.raises(NotImplementedError,
                       match=r"validation_epoch_end` has been removed in v2.0"):
        trainer.fit(ValidationEpochEndModel())
    with pytest.raises(NotImplementedError,
                       match=r"validation_epoch_end` has been removed in v2.0"):
        trainer.validate(ValidationEpochEndModel())
    with pytest.raises(NotImplementedError, match=r"test_epoch_end` has been removed in v2.0"):
        trainer.test(TestEpochEndModel())
    assert trainer.global_step == 0 and trainer.module is None  # refused before anything ran


def test_message_and_the_stages_it_applies_to(tmp_path) -> None:
    with pytest.raises(LegacyHookError) as caught:
        _trainer(tmp_path).test(TestEpochEndModel())
    assert isinstance(caught.value, FulmenError)
    message = str(caught.value)
    assert "`TestEpochEndModel` implements this method" in message
    assert "You can use the `on_test_epoch_end` hook instead" in message
    assert "fulmen migrate" in message
    # a hook only another stage would call does not stop this one (as in Lightning)
    _trainer(tmp_path).validate(TestEpochEndModel(), verbose=False)
    _trainer(tmp_path).test(TrainingEpochEndModel(), verbose=False)
    _trainer(tmp_path).predict(ValidationEpochEndModel())
