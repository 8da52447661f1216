"""Lightning's ``tests_pytorch/trainer/properties/test_estimated_stepping_batches.py`` and
``trainer/test_dataloaders.py::test_dataloaders_reset_and_attach`` (``trainer.train_dataloader``,
``val_dataloaders``, ``test_dataloaders``, ``predict_dataloaders``), ported to fulmen.

Adapted: Lightning's tests attach the data and connect the model through private members
(``trainer._data_connector.attach_data``, ``trainer.strategy.connect``) and read the property
outside a run; here it is read where scripts read it, in ``configure_optimizers`` of a real
``fit`` (outside fit it raises: there is no training data to count). The iterable-dataset case
runs 50 steps instead of 1000. ``test_dataloaders_reset_and_attach`` raises ``max_steps`` (a
public attribute) instead of the fit loop's private one. The multi-GPU and TPU cases need
hardware or Lightning's CUDA mock and are left out (the DDP per-rank count is the same
``num_training_batches`` the sampler gives each rank).

Deliberate differences: none.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest
import torch
from boring import BoringModel, RandomDataset, RandomIterableDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen import FulmenError
from fulmen.callbacks import Callback

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False,
         "enable_checkpointing": False}


class Reads(BoringModel):
    """Reads ``estimated_stepping_batches`` in ``configure_optimizers`` (and on train start)."""

    def __init__(self) -> None:
        super().__init__()
        self.estimates: list[Any] = []

    def configure_optimizers(self):
        self.estimates.append(self.trainer.estimated_stepping_batches)
        return super().configure_optimizers()

    def on_train_start(self):
        self.estimates.append(self.trainer.estimated_stepping_batches)


class StopAtFirstBatch(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        trainer.should_stop = True


def test_num_stepping_batches_basic(tmp_path):
    """Test number of stepping batches in a general case."""
    max_epochs = 2
    model = Reads()
    fulmen.Trainer(default_root_dir=tmp_path, max_epochs=max_epochs, limit_val_batches=0,
                   **QUIET).fit(model)
    assert model.estimates == [64 * max_epochs] * 2


def test_num_stepping_batches_raises_info_with_no_dataloaders_loaded(tmp_path, caplog):
    """An info message is logged when the training dataloader is requested to estimate (in
    configure_optimizers), none when it is already set up (on_train_start)."""
    message = "to estimate number of stepping batches"
    requests: list[int] = []

    class Model(Reads):
        def train_dataloader(self):
            requests.append(1)
            return super().train_dataloader()

    model = Model()
    with caplog.at_level(logging.INFO, logger="fulmen"):
        fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_val_batches=0,
                       callbacks=[StopAtFirstBatch()], **QUIET).fit(model)
    assert model.estimates == [64, 64]
    assert caplog.text.count(message) == 1
    assert requests == [1]  # the fit reuses the dataloader requested for the estimate


def test_num_stepping_batches_iterable_dataset(tmp_path):
    """Test the stepping batches with iterable dataset configured with max steps."""
    max_steps = 50

    class Model(Reads):
        def train_dataloader(self):
            return DataLoader(RandomIterableDataset(size=32, count=int(1e10)))

    model = Model()
    fulmen.Trainer(default_root_dir=tmp_path, max_steps=max_steps, limit_val_batches=0,
                   **QUIET).fit(model)
    assert model.estimates == [max_steps] * 2


def test_num_stepping_batches_infinite_training(tmp_path):
    """Test that stepping batches is "inf" when `Trainer` is configured for infinite
    training."""
    model = Reads()
    fulmen.Trainer(default_root_dir=tmp_path, max_steps=-1, max_epochs=-1, limit_val_batches=0,
                   callbacks=[StopAtFirstBatch()], **QUIET).fit(model)
    assert model.estimates == [math.inf] * 2


@pytest.mark.parametrize("max_steps", [2, 100])
def test_num_stepping_batches_with_max_steps(max_steps, tmp_path):
    """Test stepping batches with `max_steps`."""
    trainer = fulmen.Trainer(max_steps=max_steps, default_root_dir=tmp_path,
                             limit_val_batches=0, **QUIET)
    trainer.fit(BoringModel())
    assert trainer.estimated_stepping_batches == max_steps


@pytest.mark.parametrize(("accumulate_grad_batches", "expected_steps"), [(2, 32), (3, 22)])
def test_num_stepping_batches_accumulate_gradients(tmp_path, accumulate_grad_batches,
                                                   expected_steps):
    """Test the total stepping batches when accumulation grad batches is configured."""
    model = Reads()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_val_batches=0,
                             accumulate_grad_batches=accumulate_grad_batches, **QUIET)
    trainer.fit(model)
    assert model.estimates == [expected_steps] * 2
    assert trainer.global_step == expected_steps


def test_one_cycle_lr_sized_by_the_estimate_runs_to_its_end(tmp_path):
    """What scripts use it for: ``OneCycleLR(total_steps=estimated_stepping_batches)`` stepped
    per step raises if stepped more often than the estimate."""

    class Model(BoringModel):
        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
            total = self.trainer.estimated_stepping_batches
            return {"optimizer": optimizer, "lr_scheduler": {
                "scheduler": torch.optim.lr_scheduler.OneCycleLR(optimizer, 0.1,
                                                                 total_steps=total),
                "interval": "step"}}

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=3, limit_train_batches=5,
                             accumulate_grad_batches=2, limit_val_batches=0, **QUIET)
    trainer.fit(Model())
    assert trainer.global_step == 9 == trainer.lr_scheduler_configs[0].scheduler.last_epoch


def test_estimated_stepping_batches_outside_fit_says_where_to_read_it():
    with pytest.raises(FulmenError, match=r"inside trainer\.fit"):
        _ = fulmen.Trainer(max_epochs=1, **QUIET).estimated_stepping_batches


def test_dataloaders_reset_and_attach(tmp_path):
    """Test that repeated calls to Trainer.{fit,validate,test,predict} properly reset dataloaders
    before attaching the new one."""
    # the assertions compare the datasets and not dataloaders since samplers may be replaced
    dataloader_0 = DataLoader(dataset=RandomDataset(32, 64))
    dataloader_1 = DataLoader(dataset=RandomDataset(32, 64))
    dataloader_2 = DataLoader(dataset=RandomDataset(32, 64))
    dataloader_3 = DataLoader(dataset=RandomDataset(32, 64))
    model = BoringModel()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_steps=1, limit_val_batches=1,
                             limit_test_batches=1, limit_predict_batches=1, **QUIET)
    assert trainer.train_dataloader is None

    # 1st fit
    trainer.fit(model, train_dataloaders=dataloader_0, val_dataloaders=dataloader_1)
    assert trainer.train_dataloader.dataset is dataloader_0.dataset
    assert trainer.val_dataloaders.dataset is dataloader_1.dataset
    # 2nd fit
    trainer.max_steps += 1
    trainer.fit(model, train_dataloaders=dataloader_2, val_dataloaders=dataloader_3)
    assert trainer.train_dataloader.dataset is dataloader_2.dataset
    assert trainer.val_dataloaders.dataset is dataloader_3.dataset

    # 1st validate
    trainer.validate(model, dataloaders=dataloader_0, verbose=False)
    assert trainer.val_dataloaders.dataset is dataloader_0.dataset
    # 2nd validate
    trainer.validate(model, dataloaders=dataloader_1, verbose=False)
    assert trainer.val_dataloaders.dataset is dataloader_1.dataset

    # 1st test
    trainer.test(model, dataloaders=dataloader_0, verbose=False)
    assert trainer.test_dataloaders.dataset is dataloader_0.dataset
    # 2nd test
    trainer.test(model, dataloaders=dataloader_1, verbose=False)
    assert trainer.test_dataloaders.dataset is dataloader_1.dataset

    # 1st predict
    trainer.predict(model, dataloaders=dataloader_0)
    assert trainer.predict_dataloaders.dataset is dataloader_0.dataset
    # 2nd predict
    trainer.predict(model, dataloaders=dataloader_1)
    assert trainer.predict_dataloaders.dataset is dataloader_1.dataset
