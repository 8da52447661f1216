"""Lightning's ``tests_pytorch/callbacks/test_stochastic_weight_avg.py`` (CPU parts), ported.

Differences, on purpose:
- The batch-norm epoch runs its batches forward only through the public
  ``trainer.skip_backward`` (Lightning: the private ``fit_loop._skip_backward`` plus raising
  ``accumulate_grad_batches`` and ``max_batches`` for the epoch); ``accumulate_grad_batches``
  and ``num_training_batches`` are therefore never changed. The epoch adds one to
  ``trainer.max_epochs`` until ``on_train_end`` (Lightning: to ``fit_loop.max_epochs``).
- Backward calls are counted with an ``on_after_backward`` callback hook (Lightning patches
  ``Strategy.backward``).
- On resume, the user's scheduler is dropped in ``on_load_checkpoint`` (fulmen loads scheduler
  states right after the callbacks' states, before ``on_fit_start``).
- The resume tests load with fulmen's default ``weights_only=True`` (Lightning passes False).
- Bad arguments raise ``fulmen.ConfigurationError`` (Lightning: ``MisconfigurationException``).
- The sharded-model refusal reads ``Strategy.shards_parameters`` and is checked on the CPU
  (Lightning: by class, on GPUs).
- Not ported: the GPU/MPS cases; the 2-process ``ddp_spawn`` cases (they need a spawn-safe
  backward count).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import torch
from boring import BoringModel, RandomDataset, RandomIterableDataset
from torch import nn
from torch.optim.lr_scheduler import LambdaLR
from torch.optim.swa_utils import SWALR
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import StochasticWeightAveraging


def test_swa_callback_initial_state():
    swa = StochasticWeightAveraging(swa_lrs=0.01, swa_epoch_start=0.1, annealing_epochs=1,
                                    annealing_strategy="linear", avg_fn=sum)
    assert swa._swa_lrs == 0.01
    assert swa._swa_epoch_start == 0.1
    assert swa._annealing_epochs == 1
    assert swa._annealing_strategy == "linear"
    assert swa._avg_fn == sum
    assert swa._average_model is None


class SwaTestModel(BoringModel):
    def __init__(self, batchnorm: bool = True, interval: str = "epoch",
                 iterable_dataset: bool = False, crash_on_epoch=None):
        super().__init__()
        layers = [nn.Linear(32, 32)]
        if batchnorm:
            layers.append(nn.BatchNorm1d(32))
        layers += [nn.ReLU(), nn.Linear(32, 2)]
        self.layer = nn.Sequential(*layers)
        self.interval = interval
        self.iterable_dataset = iterable_dataset
        self.crash_on_epoch = crash_on_epoch

    def training_step(self, batch, batch_idx):
        if self.crash_on_epoch and self.trainer.current_epoch >= self.crash_on_epoch:
            raise Exception("SWA crash test")
        return super().training_step(batch, batch_idx)

    def train_dataloader(self):
        dset_cls = RandomIterableDataset if self.iterable_dataset else RandomDataset
        return DataLoader(dset_cls(32, 64), batch_size=2)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": torch.optim.lr_scheduler.StepLR(optimizer,
                                                                              step_size=1),
                                 "interval": self.interval}}


class SwaTestCallback(StochasticWeightAveraging):
    update_parameters_calls: int = 0
    transfer_weights_calls: int = 0
    first_epoch: int | None = None
    backward_calls: int = 0

    def update_parameters(self, *args, **kwargs):
        self.update_parameters_calls += 1
        return StochasticWeightAveraging.update_parameters(*args, **kwargs)

    def transfer_weights(self, *args, **kwargs):
        self.transfer_weights_calls += 1
        return StochasticWeightAveraging.transfer_weights(*args, **kwargs)

    def on_after_backward(self, trainer, module):
        self.backward_calls += 1

    def on_train_epoch_start(self, trainer, *args):
        super().on_train_epoch_start(trainer, *args)
        if self.first_epoch is None:
            self.first_epoch = trainer.current_epoch
        assert trainer.skip_backward == (trainer.current_epoch > self.swa_end)
        if self.swa_start <= trainer.current_epoch:
            assert isinstance(trainer.lr_scheduler_configs[0].scheduler, SWALR)
            assert trainer.lr_scheduler_configs[0].interval == "epoch"
            assert trainer.lr_scheduler_configs[0].frequency == 1

    def on_train_epoch_end(self, trainer, *args):
        super().on_train_epoch_end(trainer, *args)
        if self.swa_start <= trainer.current_epoch <= self.swa_end:
            swa_epoch = trainer.current_epoch - self.swa_start
            assert self.n_averaged == swa_epoch + 1
            assert self._swa_scheduler is not None
            # stepped once on initialization and then at the end of each epoch
            assert self._swa_scheduler._step_count == swa_epoch + 2
        elif trainer.current_epoch > self.swa_end:
            assert self.n_averaged == self._max_epochs - self.swa_start

    def on_train_end(self, trainer, pl_module):
        super().on_train_end(trainer, pl_module)
        assert not trainer.skip_backward
        assert trainer.accumulate_grad_batches == 2
        assert trainer.num_training_batches == 5
        # the batch-norm epoch does not backward
        assert self.backward_calls == (trainer.max_epochs - self.first_epoch) * 5
        first_swa_epoch = max(self.first_epoch, self.swa_start)
        assert self.update_parameters_calls == trainer.max_epochs - first_swa_epoch
        assert self.transfer_weights_calls == 1


def train_with_swa(tmp_path, batchnorm=True, interval="epoch", iterable_dataset=False):
    model = SwaTestModel(batchnorm=batchnorm, interval=interval,
                         iterable_dataset=iterable_dataset)
    swa_callback = SwaTestCallback(swa_epoch_start=2, swa_lrs=0.1)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, enable_progress_bar=False,
                             enable_model_summary=False, max_epochs=5, limit_train_batches=5,
                             limit_val_batches=0, callbacks=[swa_callback],
                             accumulate_grad_batches=2, logger=False)
    trainer.fit(model)
    assert trainer.lightning_module == model
    assert trainer.max_epochs == 5  # the batch-norm epoch is taken back
    return model, swa_callback


@pytest.mark.parametrize("batchnorm", [True, False])
@pytest.mark.parametrize("iterable_dataset", [True, False])
def test_swa_callback(tmp_path, batchnorm: bool, iterable_dataset: bool):
    train_with_swa(tmp_path, batchnorm=batchnorm, iterable_dataset=iterable_dataset)


@pytest.mark.parametrize("interval", ["epoch", "step"])
def test_swa_callback_scheduler_step(tmp_path, interval: str):
    train_with_swa(tmp_path, interval=interval)


def test_swa_weights_are_the_average(tmp_path):
    """fulmen's own check: without batch norm the module ends with the mean of the weights at
    the start of each averaged epoch."""
    snapshots = []

    class Snapshot(fulmen.Callback):
        def on_train_epoch_start(self, trainer, module):
            if trainer.current_epoch >= 1:  # swa_epoch_start=2 is zero-based epoch 1
                snapshots.append([p.detach().clone() for p in module.parameters()])

    model = SwaTestModel(batchnorm=False)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=4, limit_train_batches=3,
                             limit_val_batches=0, logger=False, enable_progress_bar=False,
                             enable_model_summary=False, enable_checkpointing=False,
                             callbacks=[Snapshot(), StochasticWeightAveraging(
                                 swa_lrs=0.05, swa_epoch_start=2)])
    trainer.fit(model)
    assert len(snapshots) == 3
    for i, param in enumerate(model.parameters()):
        torch.testing.assert_close(param.detach(), torch.stack([s[i] for s in snapshots]).mean(0))


def test_swa_warns(tmp_path, caplog):
    model = SwaTestModel(interval="step")
    trainer = fulmen.Trainer(default_root_dir=tmp_path, fast_dev_run=True,
                             enable_progress_bar=False,
                             callbacks=StochasticWeightAveraging(swa_lrs=1e-2))
    with caplog.at_level(level=logging.INFO, logger="fulmen"), \
            pytest.warns(UserWarning, match="SWA is currently only supported"):
        trainer.fit(model)
    assert "Swapping scheduler `StepLR` for `SWALR`" in caplog.text


def test_swa_raises():
    with pytest.raises(ConfigurationError, match=">0 integer or a float between 0 and 1"):
        StochasticWeightAveraging(swa_epoch_start=0, swa_lrs=0.1)
    with pytest.raises(ConfigurationError, match=">0 integer or a float between 0 and 1"):
        StochasticWeightAveraging(swa_epoch_start=1.5, swa_lrs=0.1)
    with pytest.raises(ConfigurationError, match=">0 integer or a float between 0 and 1"):
        StochasticWeightAveraging(swa_epoch_start=-1, swa_lrs=0.1)
    with pytest.raises(ConfigurationError, match="positive float, or a list of positive floats"):
        StochasticWeightAveraging(swa_epoch_start=5, swa_lrs=[0.2, 1])
    with pytest.raises(ConfigurationError, match="annealing_strategy='exp'"):
        StochasticWeightAveraging(swa_lrs=0.1, annealing_strategy="exp")


def test_swa_deepcopy(tmp_path):
    """The averaged copy shares no dataloaders and no trainer with the module."""

    class TestSWA(StochasticWeightAveraging):
        setup_called = False

        def setup(self, trainer, pl_module, stage) -> None:
            super().setup(trainer, pl_module, stage)
            assert self._average_model.train_dataloader is not pl_module.train_dataloader
            assert self._average_model.train_dataloader.__self__ == self._average_model
            with pytest.raises(fulmen.FulmenError):
                self._average_model.trainer  # noqa: B018 - no trainer attached to the copy
            assert pl_module.trainer is trainer
            self.setup_called = True

    swa = TestSWA(swa_lrs=1e-2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, callbacks=swa, fast_dev_run=True,
                             enable_progress_bar=False)
    trainer.fit(BoringModel(), train_dataloaders=DataLoader(RandomDataset(32, 2)))
    assert swa.setup_called


def test_swa_multiple_lrs(tmp_path):
    swa_lrs = [0.123, 0.321]

    class TestModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.layer1 = torch.nn.Linear(32, 32)
            self.layer2 = torch.nn.Linear(32, 2)
            self.on_train_epoch_start_called = False

        def forward(self, x):
            return self.layer2(self.layer1(x))

        def configure_optimizers(self):
            return torch.optim.Adam([{"params": self.layer1.parameters(), "lr": 0.1},
                                     {"params": self.layer2.parameters(), "lr": 0.2}])

        def on_train_epoch_start(self):
            optimizer = self.trainer.optimizers[0]
            assert [pg["lr"] for pg in optimizer.param_groups] == [0.1, 0.2]
            assert [pg["initial_lr"] for pg in optimizer.param_groups] == swa_lrs
            assert [pg["swa_lr"] for pg in optimizer.param_groups] == swa_lrs
            self.on_train_epoch_start_called = True

    model = TestModel()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, fast_dev_run=1, enable_progress_bar=False,
                             callbacks=StochasticWeightAveraging(swa_lrs=swa_lrs))
    trainer.fit(model)
    assert model.on_train_epoch_start_called


def _swa_resume_training_from_checkpoint(tmp_path, model, resume_model):
    trainer_kwargs = {"default_root_dir": tmp_path, "max_epochs": 5, "accelerator": "cpu",
                      "limit_train_batches": 5, "limit_val_batches": 0,
                      "accumulate_grad_batches": 2, "enable_progress_bar": False,
                      "logger": False}
    trainer = fulmen.Trainer(callbacks=SwaTestCallback(swa_epoch_start=3, swa_lrs=0.1),
                             **trainer_kwargs)
    with pytest.raises(Exception, match="SWA crash test"):
        trainer.fit(model)
    checkpoint_dir = Path(tmp_path) / "checkpoints"
    checkpoint_files = os.listdir(checkpoint_dir)
    assert len(checkpoint_files) == 1
    trainer = fulmen.Trainer(callbacks=SwaTestCallback(swa_epoch_start=3, swa_lrs=0.1),
                             **trainer_kwargs)
    # SWA's state (averaged weights, SWALR's state) loads with weights_only=True
    trainer.fit(resume_model, ckpt_path=str(checkpoint_dir / checkpoint_files[0]))


class CustomSchedulerModel(SwaTestModel):
    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
        scheduler = LambdaLR(optimizer, lambda step: 0.1, -1)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "interval": self.interval}}


@pytest.mark.parametrize("crash_on_epoch", [1, 3])
def test_swa_resume_training_from_checkpoint(tmp_path, crash_on_epoch):
    _swa_resume_training_from_checkpoint(tmp_path, SwaTestModel(crash_on_epoch=crash_on_epoch),
                                         SwaTestModel())


@pytest.mark.parametrize("crash_on_epoch", [1, 3])
def test_swa_resume_training_from_checkpoint_custom_scheduler(tmp_path, crash_on_epoch):
    _swa_resume_training_from_checkpoint(
        tmp_path, CustomSchedulerModel(crash_on_epoch=crash_on_epoch), CustomSchedulerModel())


def test_swa_with_infinite_epochs_and_batchnorm(tmp_path):
    model = SwaTestModel(batchnorm=True)
    swa_callback = StochasticWeightAveraging(swa_lrs=0.1, swa_epoch_start=2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, enable_progress_bar=False,
                             enable_model_summary=False, max_epochs=-1, max_steps=30,
                             limit_train_batches=5, limit_val_batches=0,
                             callbacks=[swa_callback], logger=False)
    assert trainer.max_epochs == -1
    trainer.fit(model)
    assert trainer.current_epoch >= 5
    assert trainer.global_step == 30
    assert trainer.max_epochs == -1
    assert swa_callback.n_averaged is not None and swa_callback.n_averaged > 0


def test_swa_float_start_needs_max_epochs(tmp_path):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=-1, max_steps=3,
                             enable_progress_bar=False, logger=False,
                             callbacks=[StochasticWeightAveraging(swa_lrs=0.1)])
    with pytest.raises(ConfigurationError, match="not supported when `max_epochs=-1`"):
        trainer.fit(SwaTestModel())


@pytest.mark.parametrize("strategy", ["fsdp", "deepspeed"])
def test_misconfiguration_error_with_sharded_model(strategy):
    if strategy == "deepspeed":
        pytest.importorskip("deepspeed")
    trainer = fulmen.Trainer(accelerator="cpu", strategy=strategy, devices=1, logger=False,
                             enable_progress_bar=False)
    with pytest.raises(ConfigurationError, match="SWA does not currently support sharded models"):
        SwaTestCallback(swa_epoch_start=2, swa_lrs=0.1).setup(trainer, SwaTestModel(), "fit")
