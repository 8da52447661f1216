"""Errors a Lightning user's code catches by Lightning's type (darts' test_ptl_trainer.py
catches these two): an unknown ``Trainer`` argument is a ``TypeError`` (Python's own, in
Lightning), and ``EarlyStopping(strict=True)`` on a metric never logged a ``RuntimeError``
(Lightning's ``_validate_condition_metric``). fulmen's errors stay ``ConfigurationError``s, with
their messages."""

from __future__ import annotations

import pytest
from boring import BoringModel

import fulmen
from fulmen.callbacks import EarlyStopping
from fulmen.errors import ConfigurationError


def test_an_unknown_trainer_argument_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="did you mean 'precision'") as info:
        fulmen.Trainer(precisionn=32)
    assert isinstance(info.value, ConfigurationError)


def test_early_stopping_on_a_metric_never_logged_is_a_runtime_error(tmp_path) -> None:
    trainer = fulmen.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=2,
                             callbacks=[EarlyStopping(monitor="invalid_variable")],
                             enable_progress_bar=False, logger=False, enable_checkpointing=False,
                             default_root_dir=tmp_path)
    with pytest.raises(RuntimeError, match="invalid_variable") as info:
        trainer.fit(BoringModel())
    assert isinstance(info.value, ConfigurationError)
