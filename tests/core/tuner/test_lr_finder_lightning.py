"""Lightning's ``tests_pytorch/tuner/test_lr_finder.py`` (CPU, one-process parts), ported.

Differences, on purpose:
- The search runs as a trial inside fit (``Trainer.run_trial``) and keeps the starting state in
  memory instead of a ``.lr_find_<uuid>.ckpt`` file, so there is no file to clean up and
  ``weights_only`` has nothing to load (it is accepted and ignored).
- A missing learning-rate attribute and a second optimizer are ``fulmen.ConfigurationError``
  (Lightning: ``AttributeError`` / ``MisconfigurationException``).
- ``_total_batch_idx`` (a debugging counter of Lightning's loop) does not exist.
- Not ported: the ``ddp`` case (standalone in Lightning), the ``ClassifDataModule`` case (needs
  scikit-learn data), the plotting, checkpoint-file and ``weights_only`` cases, and the restart
  flags of Lightning's loops.
"""

from __future__ import annotations

import math
from copy import deepcopy
from typing import Any

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import BackboneFinetuning, LearningRateFinder
from fulmen.tuner import Tuner

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}


def _trainer(tmp_path, **kwargs: Any) -> fulmen.Trainer:
    return fulmen.Trainer(default_root_dir=tmp_path, **{**QUIET, **kwargs})


def test_error_with_multiple_optimizers(tmp_path):
    class CustomBoringModel(BoringModel):
        def __init__(self, lr):
            super().__init__()
            self.save_hyperparameters()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            return None

        def configure_optimizers(self):
            return [torch.optim.SGD(self.parameters(), lr=self.hparams.lr),
                    torch.optim.Adam(self.parameters(), lr=self.hparams.lr)]

    tuner = Tuner(_trainer(tmp_path, max_epochs=1))
    with pytest.raises(ConfigurationError, match="only works with a single optimizer"):
        tuner.lr_find(CustomBoringModel(lr=1e-2))


def test_model_reset_correctly(tmp_path):
    model = BoringModel()
    model.lr = 0.1
    tuner = Tuner(_trainer(tmp_path, max_epochs=1))
    before_state_dict = deepcopy(model.state_dict())
    tuner.lr_find(model, num_training=5)
    for key, value in model.state_dict().items():
        assert torch.equal(before_state_dict[key], value), "model not reset after lr_find"
    assert not list(tmp_path.glob(".lr_find*"))


def test_trainer_reset_correctly(tmp_path):
    model = BoringModel()
    model.lr = 0.1
    trainer = _trainer(tmp_path, max_epochs=1)
    names = ["accumulate_grad_batches", "callbacks", "checkpoint_callback", "current_epoch",
             "loggers", "global_step", "max_steps", "should_stop", "limit_val_batches"]
    expected = {name: getattr(trainer, name) for name in names}
    Tuner(trainer).lr_find(model, num_training=5)
    assert {name: getattr(trainer, name) for name in names} == expected
    assert model.trainer is trainer


@pytest.mark.parametrize("attr_name", ["lr", "my_fancy_lr"])
@pytest.mark.parametrize("use_hparams", [False, True])
def test_tuner_lr_find(tmp_path, use_hparams, attr_name):
    """Lightning's test_tuner_lr_find and test_trainer_arg_str in one: the attribute the
    suggestion is written to, found by name or given with ``attr_name``."""
    fulmen.seed_everything(1)

    class CustomBoringModel(BoringModel):
        def __init__(self, **kwargs):
            super().__init__()
            self.save_hyperparameters()
            setattr(self, attr_name, kwargs[attr_name])

        def configure_optimizers(self):
            lr = self.hparams[attr_name] if use_hparams else getattr(self, attr_name)
            return torch.optim.SGD(self.parameters(), lr=lr)

    model = CustomBoringModel(**{attr_name: 1e-2})
    Tuner(_trainer(tmp_path, max_epochs=2)).lr_find(
        model, update_attr=True, attr_name="" if attr_name == "lr" else attr_name)
    after_lr = model.hparams[attr_name] if use_hparams else getattr(model, attr_name)
    assert after_lr is not None and after_lr != 1e-2


@pytest.mark.parametrize("opt", ["Adam", "Adagrad"])
def test_call_to_trainer_method(tmp_path, opt):
    fulmen.seed_everything(1)

    class CustomBoringModel(BoringModel):
        def __init__(self, lr):
            super().__init__()
            self.save_hyperparameters()

        def configure_optimizers(self):
            return getattr(torch.optim, opt)(self.parameters(), lr=self.hparams.lr)

    model = CustomBoringModel(1e-2)
    tuner = Tuner(_trainer(tmp_path, max_epochs=2))
    lr_finder = tuner.lr_find(model, mode="linear")
    after_lr = lr_finder.suggestion()
    assert after_lr is not None and after_lr != 1e-2
    model.hparams.lr = after_lr
    tuner.lr_find(model, update_attr=True)


def test_accumulation_and_early_stopping(tmp_path):
    fulmen.seed_everything(1)

    class TestModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.lr = 1e-3

    lr_finder = Tuner(_trainer(tmp_path, accumulate_grad_batches=2)).lr_find(
        TestModel(), early_stop_threshold=None)
    assert lr_finder.suggestion() != 1e-3
    assert len(lr_finder.results["lr"]) == len(lr_finder.results["loss"]) == 100


def test_suggestion_parameters_work(tmp_path):
    fulmen.seed_everything(1)

    class CustomBoringModel(BoringModel):
        def __init__(self, lr):
            super().__init__()
            self.lr = lr

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.lr)

    lr_finder = Tuner(_trainer(tmp_path, max_epochs=3)).lr_find(CustomBoringModel(lr=1e-2))
    lr1 = lr_finder.suggestion(skip_begin=10)
    lr2 = lr_finder.suggestion(skip_begin=70)
    assert lr1 is not None and lr2 is not None and lr1 != lr2

    before_lr = lr_finder.suggestion()
    lr_finder.results["loss"][-1] = float("nan")
    assert lr_finder.suggestion() == before_lr  # non-finite values are left out


def test_lr_finder_fails_fast_on_bad_config(tmp_path):
    with pytest.raises(ConfigurationError, match="should have one of these fields"):
        Tuner(_trainer(tmp_path, max_steps=2)).lr_find(BoringModel(), update_attr=True)
    with pytest.raises(ConfigurationError, match="`mode` should be either of"):
        Tuner(_trainer(tmp_path, max_steps=2)).lr_find(BoringModel(), mode="cubic")
    with pytest.raises(ConfigurationError, match="only valid configuration"):
        Tuner(_trainer(tmp_path, max_steps=2)).lr_find(BoringModel(), method="test")


def test_lr_candidates_between_min_and_max(tmp_path):
    fulmen.seed_everything(1)

    class TestModel(BoringModel):
        def __init__(self, learning_rate=0.1):
            super().__init__()
            self.save_hyperparameters()

    lr_min, lr_max = 1e-8, 1.0
    lr_finder = Tuner(_trainer(tmp_path)).lr_find(TestModel(), max_lr=lr_min, min_lr=lr_max,
                                                  num_training=3)
    assert all(lr_min <= lr <= lr_max for lr in lr_finder.results["lr"])


def test_lr_finder_ends_before_num_training(tmp_path):
    num_training = 3

    class TestModel(BoringModel):
        def __init__(self, learning_rate=0.1):
            super().__init__()
            self.save_hyperparameters()

        def on_before_optimizer_step(self, optimizer):
            assert self.global_step < num_training

    Tuner(_trainer(tmp_path)).lr_find(model=TestModel(), num_training=num_training)


def test_multiple_lr_find_calls_gives_same_results(tmp_path):
    fulmen.seed_everything(1)
    model = BoringModel()
    model.lr = 0.1
    trainer = _trainer(tmp_path, max_epochs=2, limit_train_batches=10, limit_val_batches=2,
                       enable_checkpointing=False)
    tuner = Tuner(trainer)
    all_res = [tuner.lr_find(model).results for _ in range(3)]
    assert all(all_res[0][k] == res[k] and len(res[k]) > 10 for res in all_res[1:]
               for k in all_res[0])


def test_lr_attribute_when_suggestion_invalid(tmp_path):
    class TestModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.learning_rate = 0.123

    model = TestModel()
    lr_finder = Tuner(_trainer(tmp_path)).lr_find(model=model, update_attr=True, num_training=1)
    assert lr_finder.suggestion() is None
    assert model.learning_rate == 0.123


def test_lr_finder_callback_restarting(tmp_path):
    """Searching again at epoch 1 from ``on_train_epoch_start``: the trial sees its own
    ``max_steps`` and the run goes on with the Trainer's afterwards."""
    num_lr_steps = 100

    class MyBoringModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.learning_rate = 0.123
            self._expected_max_steps = None

        def on_train_batch_start(self, batch, batch_idx):
            if self._expected_max_steps is not None:
                assert self.trainer.max_steps == self._expected_max_steps

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.learning_rate)

    searches = []

    class CustomLearningRateFinder(LearningRateFinder):
        milestones = (1,)

        def lr_find(self, trainer, pl_module) -> None:
            pl_module._expected_max_steps = trainer.global_step + self._num_training_steps
            step, epoch = trainer.global_step, trainer.current_epoch
            super().lr_find(trainer, pl_module)
            pl_module._expected_max_steps = None
            assert (trainer.global_step, trainer.current_epoch) == (step, epoch)
            assert trainer.max_steps == -1
            searches.append(epoch)

        def on_fit_start(self, trainer, pl_module):
            return

        def on_train_epoch_start(self, trainer, pl_module):
            if trainer.current_epoch in self.milestones or trainer.current_epoch == 0:
                self.lr_find(trainer, pl_module)

    trainer = _trainer(tmp_path, max_epochs=3, limit_train_batches=10, limit_val_batches=0,
                       num_sanity_val_steps=0, callbacks=[CustomLearningRateFinder(
                           early_stop_threshold=None, update_attr=True,
                           num_training_steps=num_lr_steps)])
    trainer.fit(MyBoringModel())
    assert searches == [0, 1]
    assert trainer.global_step == 30


def test_lr_finder_callback_val_batches(tmp_path):
    class CustomBoringModel(BoringModel):
        def __init__(self, lr):
            super().__init__()
            self.lr = lr

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.lr)

    trainer = _trainer(tmp_path, num_sanity_val_steps=0, max_epochs=1,
                       callbacks=[LearningRateFinder(num_training_steps=5)])
    trainer.fit(CustomBoringModel(0.1))
    assert trainer.num_val_batches[0] == 64  # the whole validation set, not the trial's 5


def test_lr_finder_training_step_none_output(tmp_path):
    none_steps = [5, 12, 17]

    class CustomBoringModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.lr = 0.123

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            if self.trainer.global_step in none_steps:
                return None
            return super().training_step(batch, batch_idx)

    fulmen.seed_everything(1)
    model = CustomBoringModel()
    lr_finder = Tuner(_trainer(tmp_path)).lr_find(model=model, update_attr=True, num_training=20,
                                                  early_stop_threshold=None)
    assert len(lr_finder.results["lr"]) == len(lr_finder.results["loss"]) == 20
    assert torch.isnan(torch.tensor(lr_finder.results["loss"])[none_steps]).all()
    suggested_lr = lr_finder.suggestion()
    assert math.isfinite(suggested_lr)
    assert math.isclose(model.lr, suggested_lr)


def test_lr_finder_callback_applies_lr_after_restore(tmp_path):
    """The suggestion reaches the optimizer the real run trains with."""
    seen = []

    class Model(BoringModel):
        def __init__(self):
            super().__init__()
            self.lr = 1e-3

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.lr)

        def on_train_start(self):
            seen.append(self.trainer.optimizers[0].param_groups[0]["lr"])

    finder = LearningRateFinder(num_training_steps=30, early_stop_threshold=None)
    model = Model()
    trainer = _trainer(tmp_path, max_epochs=1, limit_train_batches=40, limit_val_batches=0,
                       callbacks=[finder])  # room for the trial's 30 steps
    trainer.fit(model)
    suggestion = finder.optimal_lr.suggestion()
    assert suggestion is not None and model.lr == suggestion
    assert seen[-1] == suggestion  # the last on_train_start is the real run's


def test_lr_finder_with_backbone_finetuning_callback(tmp_path):
    class ModelWithBackbone(BoringModel):
        def __init__(self):
            super().__init__()
            self.backbone = torch.nn.Linear(32, 32)
            self.lr = 1e-3

        def forward(self, x):
            return self.layer(self.backbone(x))

        def configure_optimizers(self):
            return torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()),
                                   lr=self.lr)

    trainer = _trainer(tmp_path, max_epochs=3, limit_train_batches=2, limit_val_batches=0,
                       callbacks=[LearningRateFinder(num_training_steps=10),
                                  BackboneFinetuning(unfreeze_backbone_at_epoch=1)])
    trainer.fit(ModelWithBackbone())
    assert len(trainer.optimizers[0].param_groups) == 2


def test_lr_finder_rejects_bad_arguments():
    with pytest.raises(ConfigurationError, match="mode='cubic'"):
        LearningRateFinder(mode="cubic")
    with pytest.raises(ConfigurationError, match="num_training=0"):
        LearningRateFinder(num_training_steps=0)
