"""Lightning's ``tests_pytorch/callbacks/test_model_summary.py`` and
``test_rich_model_summary.py``, ported to fulmen.

Deliberate differences: the plain summary goes to the ``fulmen`` logger (Lightning: its
``lightning.pytorch`` logger), so the tests read it with ``caplog``; the rich tests read the
console's output instead of patching ``rich.console.Console.print``. rich is a dependency of
fulmen, so Lightning's "rich is not installed" test has no counterpart.
"""

from __future__ import annotations

import logging
from io import StringIO
from typing import Any

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import ModelSummary, RichModelSummary, RichProgressBar
from fulmen.utilities.model_summary import summarize


def _fit(callbacks, **kwargs):
    trainer = fulmen.Trainer(callbacks=callbacks, max_steps=1, limit_val_batches=0, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, **kwargs)
    trainer.fit(BoringModel())
    return trainer


def test_model_summary_callback_present_trainer():
    trainer = fulmen.Trainer(logger=False)
    assert any(isinstance(cb, ModelSummary) for cb in trainer.callbacks)
    trainer = fulmen.Trainer(callbacks=ModelSummary(), logger=False)
    assert sum(isinstance(cb, ModelSummary) for cb in trainer.callbacks) == 1
    trainer = fulmen.Trainer(callbacks=RichModelSummary(), logger=False)
    assert sum(isinstance(cb, ModelSummary) for cb in trainer.callbacks) == 1
    trainer = fulmen.Trainer(enable_model_summary=False, logger=False)
    assert not any(isinstance(cb, ModelSummary) for cb in trainer.callbacks)


def test_custom_model_summary_callback_summarize(caplog):
    class CustomModelSummary(ModelSummary):
        @staticmethod
        def summarize(summary_data, total_parameters, trainable_parameters, model_size,
                      total_training_modes, total_flops, **summarize_kwargs):
            assert summary_data[1][0] == "Name"
            assert total_parameters == 66
            assert trainable_parameters == 66
            assert total_training_modes == {"train": 1, "eval": 0}
            assert total_flops == 0
            CustomModelSummary.called = True

    _fit(CustomModelSummary())
    assert CustomModelSummary.called


def test_model_summary_logged(caplog):
    with caplog.at_level(logging.INFO, logger="fulmen"):
        _fit(ModelSummary(max_depth=1))
    text = caplog.text
    assert "| Name  | Type   | Params | Mode  | FLOPs" in text
    assert "66        Trainable params" in text and "Total Flops" in text


def test_model_summary_max_depth_zero_is_off(caplog):
    with caplog.at_level(logging.INFO, logger="fulmen"):
        _fit(ModelSummary(max_depth=0))
    assert "Trainable params" not in caplog.text


def test_rich_model_summary_callback():
    trainer = fulmen.Trainer(callbacks=RichProgressBar(), logger=False)
    assert any(isinstance(cb, RichModelSummary) for cb in trainer.callbacks)
    assert isinstance(trainer.progress_bar_callback, RichProgressBar)


@pytest.fixture
def rich_output():
    """rich's global console, writing to a buffer (``rich.reconfigure``, its public API)."""
    import rich

    output = StringIO()
    rich.reconfigure(file=output, width=200)
    yield output
    rich.reconfigure()


def test_rich_summary_tuples(rich_output):
    """Tuples become strings; the table and the parameter breakdown are printed."""
    output = rich_output

    class TestModel(BoringModel):
        @property
        def example_input_array(self) -> Any:
            return torch.randn(4, 32)

    summary = summarize(TestModel())
    RichModelSummary().summarize(summary_data=summary._get_summary_data(), total_parameters=1,
                                 trainable_parameters=1, model_size=5500.0,
                                 total_training_modes=summary.total_training_modes,
                                 total_flops=1)
    text = output.getvalue()
    for cell in ("layer", "Linear", "66", "train", "512", "[4, 32]", "[4, 2]"):
        assert cell in text
    assert "5,500.000" in text and "5.5 K" not in text  # model size is formatted, not counted
    assert "Total FLOPs" in text
