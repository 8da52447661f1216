"""Lightning's ``tests_pytorch/tuner/test_scale_batch_size.py`` (CPU parts), ported.

Differences, on purpose:
- Trials run inside the stage through ``Trainer.run_trial`` and keep the starting state in
  memory (no ``.scale_batch_size_*.ckpt`` file).
- The loaders the run uses are checked through the batch sizes the module's and datamodule's
  ``*_dataloader()`` methods see (fulmen has no ``trainer.train_dataloader``).
- Out-of-memory errors are raised by the model itself (``torch.OutOfMemoryError``, or a
  RuntimeError with CUDA's message) above a size, instead of patching the loop's ``run``.
- Bad arguments and a missing batch-size attribute are ``fulmen.ConfigurationError``
  (a ``ValueError``; Lightning: ``ValueError``/``MisconfigurationException``).
- Not ported: the GPU/AMP cases.
"""

from __future__ import annotations

import logging
import math
from copy import deepcopy

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import BatchSizeFinder
from fulmen.tuner import Tuner

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}
SIZES: dict[str, list[int]] = {}  # data method -> batch sizes it built loaders with


def _loader(kind: str, batch_size: int) -> DataLoader:
    SIZES.setdefault(kind, []).append(batch_size)
    return DataLoader(RandomDataset(32, 64), batch_size=batch_size)


class BatchSizeDataModule(fulmen.DataModule):
    def __init__(self, batch_size):
        super().__init__()
        if batch_size is not None:
            self.batch_size = batch_size

    def train_dataloader(self):
        return _loader("dm_train", getattr(self, "batch_size", 1))


class BatchSizeModel(BoringModel):
    def __init__(self, batch_size):
        super().__init__()
        if batch_size is not None:
            self.batch_size = batch_size

    def train_dataloader(self):
        return _loader("train", getattr(self, "batch_size", 1))

    def val_dataloader(self):
        return _loader("val", getattr(self, "batch_size", 1))

    def test_dataloader(self):
        return _loader("test", getattr(self, "batch_size", 1))

    def predict_dataloader(self):
        return _loader("predict", getattr(self, "batch_size", 1))


class OOMModel(BatchSizeModel):
    """Runs out of memory above ``limit`` samples per batch."""

    def __init__(self, batch_size, limit, error=torch.OutOfMemoryError):
        super().__init__(batch_size)
        self.limit, self.error = limit, error

    def forward(self, x):
        if x.shape[0] > self.limit:
            raise self.error("CUDA out of memory. Tried to allocate 2.00 GiB")
        return super().forward(x)


@pytest.fixture(autouse=True)
def _clear_sizes():
    SIZES.clear()


@pytest.mark.parametrize(("model_bs", "dm_bs"), [(2, -1), (2, 2), (2, None), (None, 2), (16, 16)])
def test_scale_batch_size_method_with_model_or_datamodule(tmp_path, model_bs, dm_bs):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, limit_train_batches=1,
                             limit_val_batches=0, max_epochs=1, **QUIET)
    model = BatchSizeModel(model_bs)
    datamodule = BatchSizeDataModule(dm_bs) if dm_bs != -1 else None
    new_batch_size = Tuner(trainer).scale_batch_size(model, mode="binsearch", init_val=4,
                                                     max_trials=2, datamodule=datamodule)
    assert new_batch_size == 7  # a margin of 5% on 8 -> int(8 * 0.95) = 7
    if model_bs is not None:
        assert model.batch_size == new_batch_size
    if dm_bs not in (-1, None):
        assert datamodule.batch_size == new_batch_size
    if dm_bs is not None:  # the last trial ran with 8 (a datamodule without the field: 1)
        assert SIZES["train" if dm_bs == -1 else "dm_train"][-1] == 8


@pytest.mark.parametrize("trainer_fn", ["fit", "validate", "test", "predict"])
def test_trainer_reset_correctly(tmp_path, trainer_fn):
    model = BatchSizeModel(batch_size=2)
    before_state_dict = deepcopy(model.state_dict())
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET)
    names = ["loggers", "callbacks", "global_step", "current_epoch", "max_steps",
             "limit_train_batches", "limit_val_batches", "limit_test_batches",
             "limit_predict_batches"]
    expected = {name: getattr(trainer, name) for name in names}
    found = Tuner(trainer).scale_batch_size(model, max_trials=64, method=trainer_fn)
    assert found == 64  # capped at the dataset's length
    assert {name: getattr(trainer, name) for name in names} == expected
    for key, value in model.state_dict().items():
        assert torch.equal(before_state_dict[key], value)
    assert not list(tmp_path.glob(".scale_batch_size*"))


@pytest.mark.parametrize("use_hparams", [True, False])
def test_auto_scale_batch_size_set_model_attribute(tmp_path, use_hparams):
    class HparamsBatchSizeModel(BoringModel):
        def __init__(self, *args, **kwargs):
            super().__init__()
            self.save_hyperparameters()

        def train_dataloader(self):
            return _loader("train", self.hparams.batch_size)

        def val_dataloader(self):
            return _loader("val", self.hparams.batch_size)

    model = (HparamsBatchSizeModel if use_hparams else BatchSizeModel)(batch_size=2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET)
    Tuner(trainer).scale_batch_size(model, steps_per_trial=2, max_trials=4)
    after = model.hparams.batch_size if use_hparams else model.batch_size
    assert after != 2 and after <= 64


@pytest.mark.parametrize("use_hparams", [True, False])
def test_auto_scale_batch_size_set_datamodule_attribute(tmp_path, use_hparams):
    class HparamsBatchSizeDataModule(fulmen.DataModule):
        def __init__(self, batch_size):
            super().__init__()
            self.save_hyperparameters()

        def train_dataloader(self):
            return _loader("dm_train", self.hparams.batch_size)

    datamodule = (HparamsBatchSizeDataModule if use_hparams else BatchSizeDataModule)(2)
    model = BatchSizeModel(batch_size=2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET)
    Tuner(trainer).scale_batch_size(model, datamodule=datamodule, steps_per_trial=2,
                                    max_trials=4)
    after = datamodule.hparams.batch_size if use_hparams else datamodule.batch_size
    assert trainer.datamodule is datamodule
    assert 2 < after <= 64


def test_auto_scale_batch_size_duplicate_attribute_warning(tmp_path):
    class TestModel(BoringModel):
        def __init__(self, batch_size=1):
            super().__init__()
            self.batch_size = 1
            self.save_hyperparameters()

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_steps=1, max_epochs=1000, **QUIET)
    with pytest.warns(UserWarning, match="Field `model.batch_size` and `model.hparams.batch_size`"
                                         " are mutually exclusive!"):
        Tuner(trainer).scale_batch_size(TestModel())


@pytest.mark.parametrize("scale_method", ["power", "binsearch"])
def test_call_to_trainer_method(tmp_path, scale_method):
    model = BatchSizeModel(batch_size=2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET)
    after = Tuner(trainer).scale_batch_size(model, mode=scale_method, max_trials=5)
    model.batch_size = after
    trainer.fit(model)
    assert after != 2


def test_error_on_dataloader_passed_to_fit(tmp_path):
    model = BatchSizeModel(batch_size=2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_val_batches=0.1,
                             limit_train_batches=0.2, **QUIET)
    with pytest.raises(ConfigurationError, match="Batch size finder cannot be used with "
                                                 "dataloaders passed directly"):
        Tuner(trainer).scale_batch_size(model, train_dataloaders=model.train_dataloader(),
                                        mode="power")


def test_scale_batch_size_no_trials(tmp_path):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_val_batches=1,
                             limit_train_batches=1, **QUIET)
    assert Tuner(trainer).scale_batch_size(BatchSizeModel(batch_size=2), max_trials=0,
                                           mode="power") == 2


def test_scale_batch_size_fails_with_unavailable_mode(tmp_path):
    class TestModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.batch_size = 2

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_val_batches=1,
                             limit_train_batches=1, **QUIET)
    with pytest.raises(ValueError, match="should be either of") as info:
        Tuner(trainer).scale_batch_size(TestModel(), mode="ThisModeDoesNotExist")
    assert "'power', 'binsearch'" in str(info.value)  # the options are listed
    with pytest.raises(ConfigurationError, match="mode='linear'"):
        BatchSizeFinder(mode="linear")


@pytest.mark.parametrize("scale_method", ["power", "binsearch"])
@pytest.mark.parametrize("init_batch_size", [8, 17, 64])
def test_dataloader_reset_with_scale_batch_size(tmp_path, caplog, scale_method,
                                                init_batch_size):
    model = BatchSizeModel(batch_size=16)
    max_trials = 2
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET)
    with caplog.at_level(logging.INFO, logger="fulmen"):
        new_batch_size = Tuner(trainer).scale_batch_size(
            model, max_trials=max_trials, steps_per_trial=2, init_val=init_batch_size,
            mode=scale_method)
    expected_tries = max_trials - 1 if init_batch_size < 64 else 0
    assert caplog.text.count("trying batch size") == expected_tries
    largest_tested = new_batch_size if scale_method == "power" \
        else math.ceil(new_batch_size * 100 / 95)
    assert caplog.text.count("greater or equal than the length") == int(largest_tested >= 64)
    trainer.fit(model)  # the real run builds its loaders with the size found
    assert SIZES["train"][-1] == SIZES["val"][-1] == new_batch_size


@pytest.mark.parametrize("error", [torch.OutOfMemoryError, RuntimeError])
@pytest.mark.parametrize(("mode", "expected"), [("power", 16), ("binsearch", 22)])
def test_out_of_memory_stops_the_search(tmp_path, error, mode, expected):
    """fulmen's own: sizes above 24 run out of memory; power keeps the last size that fit,
    binsearch narrows to 24 and applies the 5% margin."""
    model = OOMModel(batch_size=2, limit=24, error=error)
    finder = BatchSizeFinder(mode=mode, init_val=2)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                             limit_val_batches=0, callbacks=[finder], **QUIET)
    trainer.fit(model)  # the search, then the real run with the size found
    assert finder.optimal_batch_size == model.batch_size == expected
    assert SIZES["train"][-1] == expected
    assert trainer.global_step == 2


def test_other_errors_propagate(tmp_path):
    class Broken(BatchSizeModel):
        def forward(self, x):
            if x.shape[0] > 4:
                raise RuntimeError("shape mismatch")
            return super().forward(x)

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET,
                             callbacks=[BatchSizeFinder()])
    with pytest.raises(RuntimeError, match="shape mismatch"):
        trainer.fit(Broken(batch_size=2))


def test_missing_attribute_refused(tmp_path):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET,
                             callbacks=[BatchSizeFinder(batch_arg_name="bs")])
    with pytest.raises(ConfigurationError, match="Field bs not found"):
        trainer.fit(BatchSizeModel(batch_size=2))
