"""Lightning's ``tests_pytorch/callbacks/test_weight_averaging.py``, ported (the CPU tests:
EMA with and without batch norm and an iterable dataset, SWA on chosen epochs, resuming an EMA
run from a checkpoint, ``EMAWeightAveraging.should_update``, that the average does not copy the
trainer).

Difference: Lightning's callbacks skip the first epoch hook of a resumed fit through
``trainer.fit_loop.restarting``; fulmen has no such flag, and a resumed fit starts at the next
epoch, so the first epoch seen is the resumed one.
"""

from __future__ import annotations

import os
from copy import deepcopy
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.optim.swa_utils import get_swa_avg_fn
from torch.utils.data import DataLoader, Dataset

from fulmen import FulmenError, Trainer
from fulmen.callbacks.weight_averaging import EMAWeightAveraging, WeightAveraging
from fulmen.demos.boring_classes import BoringModel, RandomDataset, RandomIterableDataset


class TestModel(BoringModel):
    def __init__(self, batch_norm: bool = True) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Linear(32, 32)]
        if batch_norm:
            layers.append(nn.BatchNorm1d(32))
        layers += [nn.ReLU(), nn.Linear(32, 2)]
        self.layer = nn.Sequential(*layers)
        self.crash_on_epoch: int | None = None

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if self.crash_on_epoch and self.trainer.current_epoch >= self.crash_on_epoch:
            raise Exception("CRASH")
        return super().training_step(batch, batch_idx)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.layer.parameters(), lr=0.1)


class EMAAveragingFunction:
    def __init__(self, decay: float = 0.999) -> None:
        self.decay = decay

    @torch.no_grad()
    def __call__(self, ema_param: Any, current_param: Any, num_averaged: Any) -> Any:
        return self.decay * ema_param + (1 - self.decay) * current_param


class CountingCallback(WeightAveraging):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.swap_calls = 0
        self.copy_calls = 0
        self.first_epoch: int | None = None

    def _swap_models(self, *args: Any) -> None:
        self.swap_calls += 1
        super()._swap_models(*args)

    def _copy_average_to_current(self, *args: Any) -> None:
        self.copy_calls += 1
        super()._copy_average_to_current(*args)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        super().on_train_start(trainer, pl_module)
        assert self.swap_calls == 0 and self.copy_calls == 0

    def on_train_epoch_start(self, trainer: Any, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        if self.first_epoch is None:
            self.first_epoch = trainer.current_epoch


class EMATestCallback(CountingCallback):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(avg_fn=EMAAveragingFunction(), **kwargs)

    def on_train_epoch_end(self, trainer: Any, *args: Any) -> None:
        super().on_train_epoch_end(trainer, *args)
        assert self._average_model is not None
        assert self._average_model.n_averaged == trainer.global_step
        assert self.first_epoch is not None
        assert self.swap_calls == (trainer.current_epoch + 1 - self.first_epoch) * 2
        assert self.copy_calls == 0

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        super().on_train_end(trainer, pl_module)
        assert self._average_model is not None
        # length=32, batch_size=4, accumulate_grad_batches=2: 4 optimizer steps per epoch
        assert self._average_model.n_averaged == trainer.max_epochs * 4
        assert self.first_epoch is not None
        assert self.swap_calls == (trainer.max_epochs - self.first_epoch) * 2
        assert self.copy_calls == 1


class SWATestCallback(CountingCallback):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(avg_fn=get_swa_avg_fn(), **kwargs)

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        return epoch_idx in (3, 5, 7)

    def on_train_epoch_end(self, trainer: Any, *args: Any) -> None:
        super().on_train_epoch_end(trainer, *args)
        assert self._average_model is not None
        expected = sum(trainer.current_epoch >= e for e in (3, 5, 7))
        assert self._average_model.n_averaged == expected
        assert self.copy_calls == 0

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        super().on_train_end(trainer, pl_module)
        assert self._average_model is not None
        assert self._average_model.n_averaged == 3 and self.copy_calls == 1


def _train(model: BoringModel, dataset: Dataset, tmp_path: Path, callback: WeightAveraging,
           checkpoint_path: str | None = None, will_crash: bool = False) -> None:
    trainer = Trainer(accelerator="cpu", devices=1, logger=False, callbacks=callback,
                      max_epochs=8, num_sanity_val_steps=0, enable_checkpointing=will_crash,
                      enable_progress_bar=False, enable_model_summary=False,
                      accumulate_grad_batches=2, deterministic=True, default_root_dir=tmp_path)
    dataloader = DataLoader(dataset, batch_size=4, shuffle=False)
    if will_crash:
        with pytest.raises(Exception, match="CRASH"):
            trainer.fit(model, dataloader, ckpt_path=checkpoint_path)
    else:
        trainer.fit(model, dataloader, ckpt_path=checkpoint_path)
    assert trainer.lightning_module is model


def test_weight_averaging_deepcopy(tmp_path: Path) -> None:
    """The average copies the module, not its trainer."""
    class TestCallback(WeightAveraging):
        def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
            super().setup(trainer, pl_module, stage)
            assert self._average_model is not None
            copy = self._average_model.module
            assert copy.train_dataloader.__self__ is copy
            with pytest.raises(FulmenError, match="not attached to a Trainer"):
                copy.trainer  # noqa: B018
            assert pl_module.trainer is trainer

    trainer = Trainer(default_root_dir=tmp_path, callbacks=TestCallback(), fast_dev_run=True,
                      logger=False, enable_progress_bar=False)
    trainer.fit(BoringModel(), train_dataloaders=DataLoader(RandomDataset(32, 2)))


@pytest.mark.parametrize("batch_norm", [True, False])
@pytest.mark.parametrize("iterable_dataset", [True, False])
def test_ema(tmp_path: Path, batch_norm: bool, iterable_dataset: bool) -> None:
    dataset = RandomIterableDataset(32, 32) if iterable_dataset else RandomDataset(32, 32)
    _train(TestModel(batch_norm=batch_norm), dataset, tmp_path, EMATestCallback())


def test_swa(tmp_path: Path) -> None:
    _train(TestModel(), RandomDataset(32, 32), tmp_path, SWATestCallback())


def test_ema_resume(tmp_path: Path) -> None:
    dataset = RandomDataset(32, 32)
    model1 = TestModel()
    model2 = deepcopy(model1)
    _train(model1, dataset, tmp_path / "a", EMATestCallback())
    model2.crash_on_epoch = 3
    _train(model2, dataset, tmp_path / "b", EMATestCallback(), will_crash=True)
    checkpoint_dir = tmp_path / "b" / "checkpoints"
    [name] = os.listdir(checkpoint_dir)
    resumed = TestModel.load_from_checkpoint(str(checkpoint_dir / name))
    _train(resumed, dataset, tmp_path / "b", EMATestCallback(),
           checkpoint_path=str(checkpoint_dir / name))
    for param1, param2 in zip(model1.parameters(), resumed.parameters(), strict=True):
        assert torch.allclose(param1, param2)


def test_ema_weight_averaging_should_update() -> None:
    callback = EMAWeightAveraging(update_every_n_steps=5, update_starting_at_step=10)
    assert not callback.should_update(step_idx=5) and not callback.should_update(step_idx=9)
    assert callback.should_update(step_idx=10) and not callback.should_update(step_idx=11)
    assert not callback.should_update(step_idx=14) and callback.should_update(step_idx=15)
    callback = EMAWeightAveraging(update_starting_at_epoch=2)
    assert not callback.should_update(epoch_idx=0) and not callback.should_update(epoch_idx=1)
    assert callback.should_update(epoch_idx=2) and callback.should_update(epoch_idx=3)


def test_ema_weight_averaging_updates(tmp_path: Path) -> None:
    callback = EMAWeightAveraging(decay=0.999, update_every_n_steps=1)
    _train(TestModel(), RandomDataset(32, 32), tmp_path, callback)
    assert callback._average_model is not None and callback._average_model.n_averaged > 0
