"""The drop-in rule: what Lightning 2.6 runs, fulmen runs (with a warning where fulmen thinks it
is a mistake). Each case was run side by side with the real Lightning 2.6.6.

Ported from Lightning's tests:

- ``tests_pytorch/trainer/flags/test_fast_dev_run.py::test_callbacks_and_logger_not_called_with_
  fastdevrun``: a ``CSVLogger`` instead of the ``TensorBoardLogger``; checkpoint saves and early
  stopping checks are observed through their effects (no file, no error for the missing
  ``monitor="foo"``) instead of replacing ``save_checkpoint`` and ``_evaluate_stopping_criteria``
  with mocks; ``trainer.val_check_interval`` is not asserted (fulmen reports None, "once per
  epoch", where Lightning reports 1.0).
- ``tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_file_extension``
  and ``test_model_checkpoint_save_last`` (their class-level attributes are in
  ``tests/core/callbacks/test_model_checkpoint_lightning.py``): here the attributes are set on
  an instance, and the resume from ``ckpt_path="last"`` finds the file by them.

Not in Lightning's tests (behaviour compared by running Lightning 2.6.6):

- ``callbacks=`` and ``logger=`` as any iterable. Lightning 2.6 takes any iterable of loggers, and
  for callbacks a list or a mutable sequence such as Hydra's ``ListConfig`` (it appends its
  defaults to it; a tuple or a generator fails there with an ``AttributeError``); fulmen takes
  any iterable for both. omegaconf is not installed here: a ``MutableSequence`` subclass stands
  in for ``ListConfig``.
- ``fast_dev_run`` with a ``ModelCheckpoint`` in ``callbacks``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, MutableSequence
from pathlib import Path
from typing import Any

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import Callback, EarlyStopping, ModelCheckpoint, OnExceptionCheckpoint
from fulmen.loggers import CSVLogger, DummyLogger


class ListLike(MutableSequence[Any]):
    """What Hydra's ``instantiate`` gives for a list in a config (an ``omegaconf.ListConfig``):
    a mutable sequence that is not a ``list``."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = list(items)

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._items[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def insert(self, index: int, value: Any) -> None:
        self._items.insert(index, value)


class Counting(Callback):
    def __init__(self) -> None:
        self.fit_starts = 0

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self.fit_starts += 1


def _flags(tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    flags: dict[str, Any] = dict(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                                 limit_val_batches=2, enable_progress_bar=False,
                                 enable_model_summary=False)
    flags.update(kwargs)
    return flags


def _iterables(items: list[Any]) -> list[Any]:
    return [tuple(items), (item for item in items), ListLike(items), iter(items)]


@pytest.mark.parametrize("kind", ["tuple", "generator", "ListConfig-like", "iterator"])
def test_callbacks_and_loggers_as_any_iterable(tmp_path, kind):
    index = ["tuple", "generator", "ListConfig-like", "iterator"].index(kind)
    counting = Counting()
    logger = CSVLogger(tmp_path)
    trainer = fulmen.Trainer(**_flags(tmp_path, callbacks=_iterables([counting])[index],
                                      logger=_iterables([logger])[index]))
    trainer.fit(Unlogged())
    assert counting.fit_starts == 1
    assert trainer.loggers == [logger]
    assert trainer.checkpoint_callback is not None  # the defaults are added as to a list
    assert (Path(logger.log_dir) / "metrics.csv").is_file()


def test_a_callback_list_config_of_objects_is_not_taken_for_one_callback(tmp_path):
    callbacks = ListLike([Counting(), Counting()])
    trainer = fulmen.Trainer(**_flags(tmp_path, callbacks=callbacks, logger=False))
    trainer.fit(BoringModel())
    assert [c.fit_starts for c in callbacks] == [1, 1]


@pytest.mark.parametrize("fast_dev_run", [1, 4])
def test_callbacks_and_logger_not_called_with_fastdevrun(tmp_path, fast_dev_run):
    """Lightning's test: ModelCheckpoint and EarlyStopping are kept but idle, the logger is a
    DummyLogger (so ``self.logger.experiment.<anything>`` runs)."""

    class FastDevRunModel(BoringModel):
        def __init__(self) -> None:
            super().__init__()
            self.training_step_call_count = 0
            self.on_train_epoch_end_call_count = 0
            self.validation_step_call_count = 0
            self.on_validation_epoch_end_call_count = 0
            self.test_step_call_count = 0

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("some_metric", torch.tensor(7.0))
            self.logger.experiment.dummy_log("some_distribution", torch.randn(7) + batch_idx)
            self.training_step_call_count += 1
            return super().training_step(batch, batch_idx)

        def on_train_epoch_end(self) -> None:
            self.on_train_epoch_end_call_count += 1

        def validation_step(self, batch: Any, batch_idx: int) -> Any:
            self.validation_step_call_count += 1
            return super().validation_step(batch, batch_idx)

        def on_validation_epoch_end(self) -> None:
            self.on_validation_epoch_end_call_count += 1

        def test_step(self, batch: Any, batch_idx: int) -> Any:
            self.test_step_call_count += 1
            return super().test_step(batch, batch_idx)

    checkpoint_callback = ModelCheckpoint()
    early_stopping_callback = EarlyStopping(monitor="foo")  # never logged: a check would raise
    trainer_config = {
        "default_root_dir": tmp_path,
        "fast_dev_run": fast_dev_run,
        "val_check_interval": 2,
        "check_val_every_n_epoch": 3,  # Lightning sets 1 under fast_dev_run
        "logger": CSVLogger(tmp_path),
        "log_every_n_steps": 1,
        "callbacks": [checkpoint_callback, early_stopping_callback],
        "enable_progress_bar": False,
    }

    def _make_fast_dev_run_assertions(trainer: fulmen.Trainer, model: FastDevRunModel) -> None:
        assert model.training_step_call_count == fast_dev_run
        assert model.on_train_epoch_end_call_count == 1
        assert model.validation_step_call_count == (
            0 if model.validation_step is None else fast_dev_run)
        assert model.on_validation_epoch_end_call_count == (
            0 if model.validation_step is None else 1)
        assert model.test_step_call_count == fast_dev_run
        assert trainer.max_steps == fast_dev_run
        assert trainer.num_sanity_val_steps == 0
        assert trainer.max_epochs == 1
        assert trainer.check_val_every_n_epoch == 1
        assert isinstance(trainer.logger, DummyLogger)
        assert trainer.checkpoint_callback is checkpoint_callback
        assert checkpoint_callback.best_model_path == ""
        assert not os.path.exists(checkpoint_callback.dirpath)
        assert trainer.early_stopping_callback is early_stopping_callback
        assert early_stopping_callback.stopped_epoch == 0
        assert os.listdir(tmp_path) == []  # no log, no checkpoint

    model = FastDevRunModel()
    trainer = fulmen.Trainer(**trainer_config)
    trainer.fit(model)
    trainer.test(model, verbose=False)
    _make_fast_dev_run_assertions(trainer, model)

    model = FastDevRunModel()
    model.validation_step = None  # type: ignore[assignment,method-assign]
    trainer = fulmen.Trainer(**trainer_config)
    trainer.fit(model)
    trainer.test(model, verbose=False)
    _make_fast_dev_run_assertions(trainer, model)


def test_fast_dev_run_without_a_logger_has_none(tmp_path):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, fast_dev_run=True, logger=False,
                             enable_progress_bar=False)
    assert trainer.logger is None and trainer.loggers == []


def test_fast_dev_run_ckpt_path_best_says_why(tmp_path):
    """The checkpoint callback is there but saved nothing: Lightning's error."""
    trainer = fulmen.Trainer(default_root_dir=tmp_path, fast_dev_run=True,
                             enable_progress_bar=False)
    trainer.fit(BoringModel())
    with pytest.raises(fulmen.ConfigurationError, match=r'You cannot execute `.validate\(ckpt_'
                       r'path="best"\)` with `fast_dev_run=True`'):
        trainer.validate(ckpt_path="best", verbose=False)


def _named(callback: ModelCheckpoint) -> ModelCheckpoint:
    callback.FILE_EXTENSION = ".pt"
    callback.CHECKPOINT_NAME_LAST = "final"
    callback.CHECKPOINT_JOIN_CHAR = "_"
    callback.CHECKPOINT_EQUALS_CHAR = ":"
    callback.STARTING_VERSION = 5
    return callback


def test_checkpoint_names_set_on_an_instance_are_honoured(tmp_path):
    """Lightning 2.6.6 gives these very names and picks the same "last" (run side by side)."""
    dirpath = tmp_path / "ckpts"

    def fit(epochs: int, **kwargs: Any) -> fulmen.Trainer:
        callback = _named(ModelCheckpoint(dirpath=dirpath, save_last=True, filename="{epoch}"))
        trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=epochs, callbacks=[callback],
                                          logger=False))
        trainer.fit(BoringModel(), **kwargs)
        return trainer

    fit(2)
    assert sorted(os.listdir(dirpath)) == ["epoch:1.pt", "final.pt"]
    # a new fit writes beside them: versions start at STARTING_VERSION, joined with "_"
    fit(2)
    assert sorted(os.listdir(dirpath)) == ["epoch:1.pt", "epoch:1_v5.pt", "final.pt",
                                           "final_v5.pt"]
    # ckpt_path="last" finds the newest by the new callback's names (it wrote nothing yet)
    trainer = fit(3, ckpt_path="last")
    assert trainer.ckpt_path == str(dirpath / "final_v5.pt")
    assert sorted(os.listdir(dirpath)) == ["epoch:1.pt", "epoch:2.pt", "final.pt",
                                           "final_v5.pt"]


class PtCheckpoint(ModelCheckpoint):
    FILE_EXTENSION = ".pt"
    CHECKPOINT_NAME_LAST = "latest"


def test_checkpoint_names_of_a_subclass_find_the_last_checkpoint(tmp_path):
    dirpath = tmp_path / "ckpts"
    trainer = fulmen.Trainer(**_flags(tmp_path, callbacks=[PtCheckpoint(dirpath, save_last=True)],
                                      logger=False))
    trainer.fit(BoringModel())
    assert sorted(os.listdir(dirpath)) == ["epoch=0-step=2.pt", "latest.pt"]
    trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=2, logger=False,
                                      callbacks=[PtCheckpoint(dirpath, save_last=True)]))
    trainer.fit(BoringModel(), ckpt_path="last")
    assert trainer.ckpt_path == str(dirpath / "latest.pt")


def test_on_exception_checkpoint_file_extension_on_an_instance(tmp_path):
    class Fails(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            raise RuntimeError("stop")

    callback = OnExceptionCheckpoint(tmp_path, filename="crash")
    callback.FILE_EXTENSION = ".pt"
    trainer = fulmen.Trainer(**_flags(tmp_path, callbacks=[callback], logger=False,
                                      enable_checkpointing=False))
    with pytest.raises(RuntimeError, match="stop"):
        trainer.fit(Fails())
    assert callback.ckpt_path == str(tmp_path / "crash.pt")
    assert os.path.isfile(tmp_path / "crash.pt")


class Unlogged(BoringModel):
    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        out = super().validation_step(batch, batch_idx)
        self.log("val_loss", out["x"])
        return out


def test_filename_naming_a_metric_not_logged_yet_is_written_as_zero(tmp_path):
    """Lightning 2.6.6 writes ``epoch=0-nothere=0.00-val_loss=...``; fulmen the same, with a
    warning naming what is logged."""
    dirpath = tmp_path / "ckpts"
    callback = ModelCheckpoint(dirpath=dirpath, filename="{epoch}-{nothere:.2f}-{val_loss:.1f}")
    trainer = fulmen.Trainer(**_flags(tmp_path, callbacks=[callback], logger=False))
    with pytest.warns(RuntimeWarning, match=r"uses \{nothere\}, which is not logged \(yet\), so "
                      r"it is written as nothere=0"):
        trainer.fit(Unlogged())
    [name] = os.listdir(dirpath)
    assert name.startswith("epoch=0-nothere=0.00-val_loss=")
    assert callback.format_checkpoint_name({"epoch": 3}).endswith(
        "epoch=3-nothere=0.00-val_loss=0.0.ckpt")


class SeesBatches(fulmen.Module):
    """Records the first value of every loader's batch."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.seen: list[Any] = []

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        parts = batch.items() if isinstance(batch, dict) else enumerate(batch)
        self.seen.append({k: v[0].flatten().tolist() for k, v in parts})
        return self.layer(torch.cat([v[0] for _, v in (
            batch.items() if isinstance(batch, dict) else enumerate(batch))])).sum()

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _numbers(n: int, start: int) -> Any:
    from torch.utils.data import DataLoader, TensorDataset

    values = torch.arange(start, start + n, dtype=torch.float32).unsqueeze(1)
    return DataLoader(TensorDataset(values), batch_size=2)


@pytest.mark.parametrize("named", [False, True])
def test_several_training_dataloaders_are_combined_as_lightning_does(tmp_path, named):
    """Lightning's CombinedLoader, mode "max_size_cycle": a batch of every loader per step, the
    epoch as long as the longest loader, a shorter one starting over (Lightning 2.6.6 gives
    these very batches)."""
    short, long = _numbers(2, 0), _numbers(6, 100)
    loaders: Any = {"a": short, "b": long} if named else [long, short]
    model = SeesBatches()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=2, logger=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             enable_checkpointing=False)
    trainer.fit(model, loaders)
    assert trainer.num_training_batches == 3 and trainer.global_step == 6
    if named:
        assert model.seen[:4] == [{"a": [0.0, 1.0], "b": [100.0, 101.0]},
                                  {"a": [0.0, 1.0], "b": [102.0, 103.0]},
                                  {"a": [0.0, 1.0], "b": [104.0, 105.0]},
                                  {"a": [0.0, 1.0], "b": [100.0, 101.0]}]
        assert trainer.train_dataloader == {"a": short, "b": long}
    else:
        assert model.seen[:4] == [{0: [100.0, 101.0], 1: [0.0, 1.0]},
                                  {0: [102.0, 103.0], 1: [0.0, 1.0]},
                                  {0: [104.0, 105.0], 1: [0.0, 1.0]},
                                  {0: [100.0, 101.0], 1: [0.0, 1.0]}]
        assert trainer.train_dataloader == [long, short]
