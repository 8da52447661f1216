"""Lightning's tests of when the fit's dataloaders are requested and of
``Trainer(reload_dataloaders_every_n_epochs=n)``, ported to fulmen: from
``tests_pytorch/trainer/test_dataloaders.py`` (``test_dataloaders_load_only_once*``,
``test_dataloaders_load_every_n_epochs_*``, ``test_dataloaders_load_every_epoch_no_sanity_check``,
``test_warning_with_small_dataloader_and_*``),
``tests_pytorch/core/test_datamodules.py`` (``test_dm_reload_dataloaders_every_n_epochs``),
``tests_pytorch/trainer/connectors/test_data_connector.py``
(``test_worker_check_reload_dataloaders_every_n_epochs_limitations``) and the datamodule part of
``tests_pytorch/models/test_hooks.py`` (``test_trainer_datamodule_hook_system``).

Adapted names: ``lightning.pytorch.Trainer`` -> ``fulmen.Trainer``, ``MisconfigurationException``
-> ``fulmen.ConfigurationError``. Lightning's ``_worker_check`` is called by the Trainer here
(its warning comes when the dataloader is requested). ``test_dataloaders_load_only_once_passed_
loaders`` patches Lightning's private ``_request_dataloader`` to count requests of loaders passed
to ``fit``; here the passed loaders are checked to be the ones that run, once per stage, and the
validation is seen in the same order.

Deliberate differences: none.
"""

from __future__ import annotations

import warnings
from typing import Any
from unittest.mock import Mock, call

import pytest
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import Callback, ModelCheckpoint
from fulmen.demos.boring_classes import BoringDataModule
from fulmen.loggers import CSVLogger

Trainer = fulmen.Trainer
QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}


def _track(model: Any) -> Mock:
    tracker = Mock()
    for name in ("train_dataloader", "val_dataloader", "test_dataloader"):
        wrapped = Mock(wraps=getattr(model, name))
        setattr(model, name, wrapped)
        tracker.attach_mock(wrapped, name)
    return tracker


def test_dataloaders_load_only_once(tmp_path):
    model = BoringModel()
    tracker = _track(model)
    trainer = Trainer(default_root_dir=tmp_path, limit_train_batches=0.3, limit_val_batches=0.3,
                      max_epochs=3, **QUIET)
    trainer.fit(model)

    model.train_dataloader.assert_called_once()
    model.val_dataloader.assert_called_once()
    model.test_dataloader.assert_not_called()
    assert tracker.mock_calls == [call.val_dataloader(), call.train_dataloader()]


def test_dataloaders_load_only_once_no_sanity_check(tmp_path):
    model = BoringModel()
    trainer = Trainer(default_root_dir=tmp_path, limit_train_batches=0.3, limit_val_batches=0.3,
                      num_sanity_val_steps=0, max_epochs=3, **QUIET)
    tracker = _track(model)
    trainer.fit(model)
    assert tracker.mock_calls == [call.train_dataloader(), call.val_dataloader()]


@pytest.mark.parametrize(
    ("num_sanity_val_steps", "check_val_every_n_epoch", "reload_dataloaders_every_n_epochs",
     "train_reload_epochs_expect", "val_reload_epochs_expect", "val_step_epochs_expect"),
    [
        # general case where sanity check reloads the dataloaders for validation on current_epoch=0
        (0, 1, 1, list(range(10)), list(range(10)), list(range(10))),
        (1, 1, 1, list(range(10)), list(range(1, 10)), list(range(10))),
        # check_val_every_n_epoch < reload_dataloaders_every_n_epochs: the expected val_reload_epoch
        # and val_step_epoch differ
        (0, 1, 2, [0, 2, 4, 6, 8], [0, 2, 4, 6, 8], list(range(10))),
        (1, 1, 2, [0, 2, 4, 6, 8], [2, 4, 6, 8], list(range(10))),
        (0, 3, 4, [0, 4, 8], [2, 8], [2, 5, 8]),
        (1, 3, 4, [0, 4, 8], [2, 8], [2, 5, 8]),
        # check_val_every_n_epoch > reload_dataloaders_every_n_epochs: they are the same
        (0, 2, 1, list(range(10)), [1, 3, 5, 7, 9], [1, 3, 5, 7, 9]),
        (1, 2, 1, list(range(10)), [1, 3, 5, 7, 9], [1, 3, 5, 7, 9]),
        (0, 3, 2, [0, 2, 4, 6, 8], [2, 5, 8], [2, 5, 8]),
        (1, 3, 2, [0, 2, 4, 6, 8], [2, 5, 8], [2, 5, 8]),
        (0, 5, 2, [0, 2, 4, 6, 8], [4, 9], [4, 9]),
        (1, 5, 2, [0, 2, 4, 6, 8], [4, 9], [4, 9]),
        # check_val_every_n_epoch = reload_dataloaders_every_n_epochs: they are the same
        (0, 2, 2, [0, 2, 4, 6, 8], [1, 3, 5, 7, 9], [1, 3, 5, 7, 9]),
        (1, 2, 2, [0, 2, 4, 6, 8], [1, 3, 5, 7, 9], [1, 3, 5, 7, 9]),
    ],
)
def test_dataloaders_load_every_n_epochs_infrequent_val(
    tmp_path, num_sanity_val_steps, check_val_every_n_epoch, reload_dataloaders_every_n_epochs,
    train_reload_epochs_expect, val_reload_epochs_expect, val_step_epochs_expect,
):
    """Test dataloader reload behavior when infrequently checking validation set (via
    check_val_every_n_epoch)"""
    sanity_val_check_epochs, train_reload_epochs, val_reload_epochs = [], [], []
    sanity_val_step_epochs, val_step_epochs = [], []

    class TestModel(BoringModel):
        def train_dataloader(self):
            train_reload_epochs.append(self.current_epoch)
            return super().train_dataloader()

        def val_dataloader(self):
            if self.trainer.sanity_checking:
                sanity_val_check_epochs.append(self.current_epoch)
            else:
                val_reload_epochs.append(self.current_epoch)
            return super().val_dataloader()

        def validation_step(self, *args, **kwargs):
            if self.trainer.sanity_checking:
                sanity_val_step_epochs.append(self.current_epoch)
            else:
                val_step_epochs.append(self.current_epoch)
            return super().validation_step(*args, **kwargs)

    trainer = Trainer(
        default_root_dir=tmp_path, limit_train_batches=1, limit_val_batches=1,
        check_val_every_n_epoch=check_val_every_n_epoch,
        reload_dataloaders_every_n_epochs=reload_dataloaders_every_n_epochs, max_epochs=10,
        num_sanity_val_steps=num_sanity_val_steps, enable_checkpointing=False, **QUIET,
    )
    trainer.fit(TestModel())

    sanity_val_check_epochs_expect = [0] if num_sanity_val_steps else []
    assert sanity_val_check_epochs == sanity_val_step_epochs == sanity_val_check_epochs_expect
    assert train_reload_epochs == train_reload_epochs_expect
    assert val_reload_epochs == val_reload_epochs_expect
    assert val_step_epochs == val_step_epochs_expect


def test_dataloaders_load_every_n_epochs_frequent_val(tmp_path):
    """Test dataloader reload behavior when frequently checking validation set (via
    val_check_interval)"""
    train_reload_epochs, val_reload_epochs, val_check_epochs = [], [], []

    class TestModel(BoringModel):
        def train_dataloader(self):
            train_reload_epochs.append(self.current_epoch)
            return super().train_dataloader()

        def val_dataloader(self):
            val_reload_epochs.append(self.current_epoch)
            return super().val_dataloader()

        def on_validation_epoch_end(self):
            val_check_epochs.append(self.current_epoch)

    model = TestModel()
    trainer = Trainer(default_root_dir=tmp_path, limit_train_batches=0.3, limit_val_batches=0.3,
                      val_check_interval=0.3, reload_dataloaders_every_n_epochs=1, max_epochs=3,
                      **QUIET)
    model.test_dataloader = Mock(wraps=model.test_dataloader)
    trainer.fit(model)
    trainer.test(model, verbose=False)

    assert train_reload_epochs == [0, 1, 2]
    assert val_reload_epochs == [0, 1, 2]
    model.test_dataloader.assert_called_once()
    # validation happens 3 times per epoch + 1 for the sanity check
    assert val_check_epochs == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("n", ["test", -1])
def test_dataloaders_load_every_n_epochs_exception(tmp_path, n):
    with pytest.raises(ConfigurationError, match="should be an int >"):
        Trainer(default_root_dir=tmp_path, reload_dataloaders_every_n_epochs=n)


def test_dataloaders_load_every_epoch_no_sanity_check(tmp_path):
    class TestModel(BoringModel):
        def validation_step(self, batch, batch_idx):
            self.log("dummy_val", 5.0)
            return super().validation_step(batch, batch_idx)

    model = TestModel()
    # the evaluation metrics are available by the time checkpointing runs
    checkpoint_callback = ModelCheckpoint(monitor="dummy_val", save_top_k=1)
    trainer = Trainer(default_root_dir=tmp_path, limit_train_batches=0.3, limit_val_batches=0.3,
                      num_sanity_val_steps=0, reload_dataloaders_every_n_epochs=1, max_epochs=3,
                      callbacks=[checkpoint_callback], **QUIET)
    tracker = _track(model)
    trainer.fit(model)
    trainer.test(model, verbose=False)

    assert tracker.mock_calls == [
        call.train_dataloader(), call.val_dataloader(),
        call.train_dataloader(), call.val_dataloader(),
        call.train_dataloader(), call.val_dataloader(),
        call.test_dataloader(),
    ]


@pytest.mark.parametrize("sanity_check", [False, True])
def test_dataloaders_load_only_once_passed_loaders(tmp_path, sanity_check):
    model = BoringModel()
    train_dataloader = model.train_dataloader()
    val_dataloader = model.val_dataloader()
    test_dataloader = model.test_dataloader()
    # delete dataloader methods on the model
    model.train_dataloader = None
    model.val_dataloader = None
    model.test_dataloader = None
    stages: list[str] = []

    class Stages(Callback):
        def on_sanity_check_start(self, trainer, pl_module):
            stages.append("sanity_check")

        def on_train_epoch_start(self, trainer, pl_module):
            if trainer.current_epoch == 0:
                stages.append("train")

        def on_validation_start(self, trainer, pl_module):
            if not trainer.sanity_checking and "validate" not in stages and \
                    "sanity_check" not in stages:
                stages.append("validate")

        def on_test_start(self, trainer, pl_module):
            stages.append("test")

    trainer = Trainer(default_root_dir=tmp_path, limit_train_batches=0.3, limit_val_batches=0.3,
                      max_epochs=3, num_sanity_val_steps=1 if sanity_check else 0,
                      callbacks=[Stages()], **QUIET)
    trainer.fit(model, train_dataloader, val_dataloader)
    trainer.test(model, dataloaders=test_dataloader, verbose=False)
    expected = ["sanity_check", "train", "test"] if sanity_check else ["train", "validate", "test"]
    assert stages == expected


def test_dm_reload_dataloaders_every_n_epochs(tmp_path):
    """Test datamodule, where trainer argument reload_dataloaders_every_n_epochs is set to a non
    negative integer."""

    class CustomBoringDataModule(BoringDataModule):
        def __init__(self):
            super().__init__()
            self._epochs_called_for = []

        def train_dataloader(self):
            assert self.trainer.current_epoch not in self._epochs_called_for
            self._epochs_called_for.append(self.trainer.current_epoch)
            return super().train_dataloader()

    dm = CustomBoringDataModule()
    model = BoringModel()
    model.validation_step = None
    model.test_step = None
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=3, limit_train_batches=2,
                      reload_dataloaders_every_n_epochs=2, **QUIET)
    trainer.fit(model, dm)
    assert dm._epochs_called_for == [0, 2]


def test_worker_check_reload_dataloaders_every_n_epochs_limitations(tmp_path):
    """Test that we warn about problematic settings when using
    `reload_dataloaders_every_n_epochs`."""

    class Model(BoringModel):
        def train_dataloader(self):
            return DataLoader(super().train_dataloader().dataset, num_workers=1, pin_memory=True,
                              persistent_workers=True)

    trainer = Trainer(default_root_dir=tmp_path, max_steps=1, reload_dataloaders_every_n_epochs=1,
                      limit_val_batches=0, enable_checkpointing=False, **QUIET)
    with pytest.warns(UserWarning, match="The combination of .*reload_dataloaders_every_n_epochs"):
        trainer.fit(Model())


def test_trainer_datamodule_hook_system(tmp_path):
    """Test the LightningDataModule hook system (the fit part: with
    reload_dataloaders_every_n_epochs=1 and one epoch, each loader is requested once, the
    validation one first)."""
    called: list[str] = []

    class HookedDataModule(BoringDataModule):
        def prepare_data(self):
            called.append("prepare_data")

        def setup(self, stage):
            called.append(f"setup:{stage}")
            super().setup(stage)

        def train_dataloader(self):
            called.append("train_dataloader")
            return super().train_dataloader()

        def val_dataloader(self):
            called.append("val_dataloader")
            return super().val_dataloader()

        def teardown(self, stage):
            called.append(f"teardown:{stage}")

    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                      limit_val_batches=2, reload_dataloaders_every_n_epochs=1,
                      enable_checkpointing=False, **QUIET)
    trainer.fit(BoringModel(), datamodule=HookedDataModule())
    assert called == ["prepare_data", "setup:fit", "val_dataloader", "train_dataloader",
                      "teardown:fit"]


def test_reload_counts_from_the_resumed_epoch(tmp_path):
    """Not in Lightning's tests, its behaviour: the epoch of the last request is not saved, so a
    resumed fit requests the loaders when it starts and counts n epochs from there."""
    epochs: list[int] = []

    class Model(BoringModel):
        def train_dataloader(self):
            epochs.append(self.current_epoch)
            return super().train_dataloader()

    def trainer(max_epochs: int) -> fulmen.Trainer:
        return Trainer(default_root_dir=tmp_path, max_epochs=max_epochs, limit_train_batches=2,
                       limit_val_batches=0, reload_dataloaders_every_n_epochs=2,
                       enable_checkpointing=False, **QUIET)

    first = trainer(3)
    first.fit(Model())
    assert epochs == [0, 2]
    first.save_checkpoint(tmp_path / "three.ckpt")
    epochs.clear()
    trainer(7).fit(Model(), ckpt_path=tmp_path / "three.ckpt")
    assert epochs == [3, 5]


def test_reload_changes_the_epoch_length_and_validation_interval(tmp_path):
    """A reloaded loader of another length sets the epoch's batches and a fractional
    val_check_interval anew (Lightning's ``setup_data``)."""
    seen: list[tuple[int, int]] = []

    class Model(BoringModel):
        def train_dataloader(self):
            return DataLoader(super().train_dataloader().dataset, batch_size=4 * (
                self.current_epoch + 1))

        def on_validation_epoch_end(self):
            if not self.trainer.sanity_checking:
                seen.append((self.current_epoch, self.trainer.num_training_batches))

    trainer = Trainer(default_root_dir=tmp_path, max_epochs=2, val_check_interval=0.5,
                      limit_val_batches=1, reload_dataloaders_every_n_epochs=1,
                      num_sanity_val_steps=0, enable_checkpointing=False, **QUIET)
    trainer.fit(Model())
    assert seen == [(0, 16), (0, 16), (1, 8), (1, 8)]
    assert trainer.global_step == 16 + 8


@pytest.mark.parametrize("log_interval", [2, 11])
def test_warning_with_small_dataloader_and_logging_interval(log_interval, tmp_path):
    """Test that a warning message is shown if the dataloader length is too short for the chosen
    logging interval."""
    model = BoringModel()
    dataloader = DataLoader(RandomDataset(32, length=10))
    model.train_dataloader = lambda: dataloader
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1, log_every_n_steps=log_interval,
                      limit_train_batches=1 if log_interval < 10 else None,
                      logger=CSVLogger(tmp_path), enable_progress_bar=False,
                      enable_model_summary=False)
    with pytest.warns(UserWarning, match=rf"The number of training batches \({log_interval - 1}\) "
                      "is smaller than the logging interval"):
        trainer.fit(model)


def test_warning_with_small_dataloader_and_fast_dev_run(tmp_path):
    """No such warning under fast_dev_run."""
    model = BoringModel()
    dataloader = DataLoader(RandomDataset(32, length=10))
    model.train_dataloader = lambda: dataloader
    trainer = Trainer(default_root_dir=tmp_path, fast_dev_run=True, log_every_n_steps=2,
                      enable_progress_bar=False, enable_model_summary=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="The number of training batches")
        trainer.fit(model)
