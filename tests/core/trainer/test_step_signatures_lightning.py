"""Ports of Lightning's tests of how steps are called: ``batch_idx`` only when the step takes it
(``loops/test_training_epoch_loop.py::test_no_batch_idx_gradient_accumulation``,
``loops/test_evaluation_loop.py::test_evaluation_loop_when_batch_idx_argument_is_not_given``), and
``model.validation_step = None`` disabling validation (``core/test_datamodules.py::
test_train_loop_only``, the idiom of several callback tests).

Deliberate differences (also in docs/migrating.md):

- ``trainer.validate/test`` with the step set to None raise ``ConfigurationError`` (Lightning:
  ``MisconfigurationException``) with Lightning's message.
- ``test_train_loop_only`` uses the boring model (no scikit-learn data module).
"""

from __future__ import annotations

import pytest
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError


def test_no_batch_idx_gradient_accumulation() -> None:
    class MyModel(BoringModel):
        last_batch_idx = -1

        def training_step(self, batch):  # no batch_idx
            return self.step(batch)

        def optimizer_step(self, epoch, batch_idx, *args, **kwargs):
            assert batch_idx in (1, 3)
            self.last_batch_idx = batch_idx
            return super().optimizer_step(epoch, batch_idx, *args, **kwargs)

    trainer = fulmen.Trainer(fast_dev_run=4, accumulate_grad_batches=2, limit_val_batches=0,
                             enable_progress_bar=False, enable_model_summary=False)
    model = MyModel()
    trainer.fit(model)
    assert model.last_batch_idx == 3


def test_evaluation_loop_when_batch_idx_argument_is_not_given(tmp_path) -> None:
    class StepModel(BoringModel):
        def __init__(self) -> None:
            super().__init__()
            self.validation_step_called = False
            self.test_step_called = False
            self.predict_step_called = False

        def validation_step(self, batch):
            self.validation_step_called = True
            return {"x": self.step(batch)}

        def test_step(self, batch):
            self.test_step_called = True
            return {"y": self.step(batch)}

        def predict_step(self, batch):  # fulmen addition: predict too
            self.predict_step_called = True
            return self(batch)

    trainer = fulmen.Trainer(default_root_dir=tmp_path, fast_dev_run=1, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False)
    model = StepModel()
    trainer.validate(model)
    assert model.validation_step_called
    trainer.test(model)
    assert model.test_step_called
    trainer.predict(model)
    assert model.predict_step_called


def test_train_loop_only(tmp_path) -> None:
    model = BoringModel()
    model.validation_step = None
    model.test_step = None
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=4,
                             enable_model_summary=False, enable_progress_bar=False)
    trainer.fit(model)
    assert trainer.global_step == 4
    assert trainer.num_val_batches == [] or trainer.num_val_batches == [0]
    with pytest.raises(ConfigurationError, match=r"No `validation_step\(\)` method defined to "
                                                 r"run `Trainer.validate`"):
        trainer.validate(model)
    model.predict_step = None
    with pytest.raises(ConfigurationError, match="`predict_step` cannot be None"):
        trainer.predict(model)
