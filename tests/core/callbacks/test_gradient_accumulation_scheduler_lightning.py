"""Lightning's ``tests_pytorch/callbacks/test_gradient_accumulation_scheduler.py``, ported.

Differences, on purpose: Lightning counts ``zero_grad`` calls by patching
``torch.optim.SGD.zero_grad``; here an optimizer subclass counts them (nothing is patched).
Bad schedules raise ``fulmen.ConfigurationError`` (a ``ValueError``) where Lightning raises
``MisconfigurationException``/``TypeError``; manual optimization is a ``ConfigurationError``
where Lightning raises ``RuntimeError``. The DeepSpeed refusal reads the public
``Strategy.fixed_accumulation`` of the real plugin (Lightning mocks the strategy class).
"""

from __future__ import annotations

import math

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import GradientAccumulationScheduler

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False,
         "enable_checkpointing": False}


class CountingSGD(torch.optim.SGD):
    zero_grads = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        type(self).zero_grads += 1
        super().zero_grad(set_to_none)


class CountingModel(BoringModel):
    def configure_optimizers(self):
        CountingSGD.zero_grads = 0
        return CountingSGD(self.parameters(), lr=0.1)


@pytest.mark.parametrize("accumulate_grad_batches", [1, 2, 3])
def test_trainer_accumulate_grad_batches_zero_grad(tmp_path, accumulate_grad_batches):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, limit_train_batches=20,
                             limit_val_batches=1, max_epochs=1,
                             accumulate_grad_batches=accumulate_grad_batches, **QUIET)
    assert trainer.accumulate_grad_batches == accumulate_grad_batches
    trainer.fit(CountingModel())
    assert CountingSGD.zero_grads == math.ceil(20 / accumulate_grad_batches)


@pytest.mark.parametrize(
    ("accumulate_grad_batches", "expected_call_count"),
    [({1: 2, 3: 4}, 10 + 5 + 5 + 3), ({0: 2, 2: 1}, 5 + 5 + 10 + 10)],
)
def test_trainer_accumulate_grad_batches_with_callback(tmp_path, accumulate_grad_batches,
                                                       expected_call_count):
    seen: list[int] = []

    class Recorder(fulmen.Callback):
        def on_train_epoch_end(self, trainer, module):
            seen.append(trainer.accumulate_grad_batches)

    trainer = fulmen.Trainer(default_root_dir=tmp_path, limit_train_batches=10,
                             limit_val_batches=1, max_epochs=4, **QUIET,
                             callbacks=[GradientAccumulationScheduler(accumulate_grad_batches),
                                        Recorder()])
    assert trainer.accumulate_grad_batches == 1  # initial value of Trainer argument
    trainer.fit(CountingModel())
    assert sum(isinstance(cb, GradientAccumulationScheduler) for cb in trainer.callbacks) == 1
    assert CountingSGD.zero_grads == expected_call_count
    schedule = GradientAccumulationScheduler(accumulate_grad_batches)
    assert seen == [schedule.get_accumulate_grad_batches(e) for e in range(4)]


@pytest.mark.parametrize("scheduling", [{1: 2, -3: 4}, {0: 2, "2": 1}])
def test_invalid_keys_for_grad_accum_scheduler(scheduling):
    with pytest.raises(ConfigurationError, match="Epoch should be an int") as info:
        GradientAccumulationScheduler(scheduling=scheduling)
    assert repr(scheduling) in str(info.value)  # the error echoes what was given


@pytest.mark.parametrize("scheduling", [{1: 0, 3: 4}, {0: 2, 2: "2"}])
def test_invalid_values_for_grad_accum_scheduler(scheduling):
    with pytest.raises(ConfigurationError, match="Accumulation factor should be an int"):
        GradientAccumulationScheduler(scheduling=scheduling)


def test_empty_schedule_refused():
    with pytest.raises(ConfigurationError, match="non-empty dict"):
        GradientAccumulationScheduler(scheduling={})


def test_unsupported_manual_optimization():
    scheduler = GradientAccumulationScheduler({1: 2})
    model = BoringModel()
    model.automatic_optimization = False
    with pytest.raises(ConfigurationError, match="not supported for manual optimization"):
        scheduler.on_train_start(fulmen.Trainer(**QUIET), model)


def test_warn_if_model_has_overridden_optimization_hooks():
    class OverriddenOptimizerStepModel(BoringModel):
        def optimizer_step(self, *args, **kwargs):
            super().optimizer_step(*args, **kwargs)

    class OverriddenZeroGradModel(BoringModel):
        def optimizer_zero_grad(self, *args, **kwargs):
            super().optimizer_zero_grad(*args, **kwargs)

    scheduler = GradientAccumulationScheduler({1: 2})
    trainer = fulmen.Trainer(**QUIET)
    for model in (OverriddenOptimizerStepModel(), OverriddenZeroGradModel()):
        with pytest.warns(UserWarning, match="the hooks will not be called on every batch"):
            scheduler.on_train_start(trainer, model)


def test_raises_when_accumulate_grad_batches_with_callback(tmp_path):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, accumulate_grad_batches=2, **QUIET,
                             callbacks=[GradientAccumulationScheduler({0: 2})])
    with pytest.raises(ValueError, match="`accumulate_grad_batches` and are using the "
                                         "`GradientAccumulationScheduler`"):
        trainer.fit(BoringModel())


def test_unsupported_strategies():
    """A strategy that fixes the factor at set-up (``Strategy.fixed_accumulation``: DeepSpeed)
    is refused (Lightning mocks the strategy class; here the real plugin is composed)."""
    pytest.importorskip("deepspeed")
    trainer = fulmen.Trainer(accelerator="cpu", strategy="deepspeed", devices=1, **QUIET)
    assert trainer.strategy.fixed_accumulation
    with pytest.raises(ConfigurationError, match="does not support `accumulate_grad_batches` "
                                                 "changing between epochs"):
        GradientAccumulationScheduler({1: 2}).on_train_start(trainer, BoringModel())
