"""Ports of Lightning's logging tests: ``trainer/logging_/test_train_loop_logging.py``,
``test_eval_loop_logging.py`` and ``test_logger_connector.py`` (the parts about names, step and
epoch labels and several dataloaders), plus a test that reads CSV and TensorBoard files back.

Deliberate differences (also in docs/migrating.md):

- Lightning's tests patch ``TensorBoardLogger.log_metrics`` with ``mock``; here a small
  ``Logger`` subclass records the calls (fulmen tests patch no internals).
- ``enable_graph=True`` and ``sync_dist_group`` are taken with a warning: fulmen keeps logged
  values detached and reduces over every process.
- ``CSVLogger`` merges metrics logged at the same step into one row (Lightning writes a row per
  ``log_metrics`` call); the labels are the same.
- A name is never sent to a logger twice for one step (the logger contract): the epoch's values,
  logged at the step of its last batch, come without ``epoch``, which that batch's call already
  carried (Lightning repeats it).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.loggers import Logger


class Recorder(Logger):
    """Records ``log_metrics`` calls as ``(metrics, step)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, float], int]] = []

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.calls.append((dict(metrics), step))

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        pass


def _flags(tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    flags: dict[str, Any] = dict(default_root_dir=tmp_path, enable_model_summary=False,
                                 enable_progress_bar=False, enable_checkpointing=False)
    flags.update(kwargs)
    return flags


# ---------------------------------------------------------------- test_eval_loop_logging.py


def test__validation_step__log(tmp_path):
    """Validation values logged per step go to the loggers, not to callback metrics."""

    class TestModel(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            out = super().training_step(batch, batch_idx)
            self.log("a", out["loss"], on_step=True, on_epoch=True)
            self.log("a2", 2)
            return out

        def validation_step(self, batch: Any, batch_idx: int) -> Any:
            out = super().validation_step(batch, batch_idx)
            self.log("b", out["x"], on_step=True, on_epoch=True)
            return out

    trainer = fulmen.Trainer(**_flags(tmp_path, limit_train_batches=2, limit_val_batches=2,
                                      max_epochs=2, log_every_n_steps=1, logger=Recorder()))
    trainer.fit(TestModel())
    assert set(trainer.logged_metrics) == {"a2", "a_step", "a_epoch", "b_step", "b_epoch"}
    assert set(trainer.callback_metrics) == {"a", "a2", "b", "a_epoch", "b_epoch", "a_step"}
    assert all(isinstance(v, torch.Tensor) for v in trainer.callback_metrics.values())


def test__validation_step__epoch_end__log(tmp_path):
    class TestModel(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            out = super().training_step(batch, batch_idx)
            self.log("a", out["loss"])
            self.log("b", out["loss"], on_step=True, on_epoch=True)
            return out

        def validation_step(self, batch: Any, batch_idx: int) -> Any:
            out = super().validation_step(batch, batch_idx)
            self.log("c", out["x"])
            self.log("d", out["x"], on_step=True, on_epoch=True)
            return out

        def on_validation_epoch_end(self) -> None:
            self.log("g", torch.tensor(2, device=self.device), on_epoch=True)

    trainer = fulmen.Trainer(**_flags(tmp_path, limit_train_batches=2, limit_val_batches=2,
                                      max_epochs=2, log_every_n_steps=1, logger=Recorder()))
    trainer.fit(TestModel())
    assert set(trainer.logged_metrics) == {"a", "b_step", "b_epoch", "c", "d_step", "d_epoch",
                                           "g"}
    assert not trainer.progress_bar_metrics
    assert set(trainer.callback_metrics) == {"a", "b", "b_epoch", "c", "d", "d_epoch", "g",
                                             "b_step"}


@pytest.mark.parametrize("suffix", [False, True])
def test_multi_dataloaders_add_suffix_properly(suffix, tmp_path):
    class TestModel(BoringModel):
        def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
            out = super().test_step(batch, batch_idx)
            self.log("test_loss", out["y"], on_step=True, on_epoch=True)
            return out

        def test_dataloader(self) -> Any:
            if suffix:
                return [DataLoader(RandomDataset(32, 64)), DataLoader(RandomDataset(32, 64))]
            return super().test_dataloader()

    trainer = fulmen.Trainer(**_flags(tmp_path, limit_test_batches=2, log_every_n_steps=1,
                                      logger=Recorder()))
    results = trainer.test(TestModel(), verbose=False)
    for i, r in enumerate(results):
        expected = {"test_loss_epoch"}
        if suffix:
            expected = {e + f"/dataloader_idx_{i}" for e in expected}
        assert set(r) == expected


@pytest.mark.parametrize("num_dataloaders", [1, 2])
def test_eval_step_logging(tmp_path, num_dataloaders):
    """Per-batch evaluation values: the step is the batches each dataloader ran in this fit
    (over every validation run) or in this validate/test call."""

    class CustomBoringModel(BoringModel):
        def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: Any = None) -> None:
            self.log(f"val_log_{self.trainer.state.fn.value}", batch_idx, on_step=True, on_epoch=False)

        def test_step(self, batch: Any, batch_idx: int, dataloader_idx: Any = None) -> None:
            self.log("test_log", batch_idx, on_step=True, on_epoch=False)

        def val_dataloader(self) -> Any:
            return [super().val_dataloader()] * num_dataloaders

        def test_dataloader(self) -> Any:
            return [super().test_dataloader()] * num_dataloaders

    limit_batches, max_epochs = 4, 3
    recorder = Recorder()
    trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=max_epochs, limit_train_batches=1,
                                      limit_val_batches=limit_batches,
                                      limit_test_batches=limit_batches, logger=recorder))
    model = CustomBoringModel()

    def suffix(dl_idx: int) -> str:
        return f"/dataloader_idx_{dl_idx}" if num_dataloaders == 2 else ""

    def eval_calls(name: str) -> list[tuple[dict[str, float], int]]:
        return [c for c in recorder.calls if any(k.startswith(name) for k in c[0])]

    eval_steps = range(limit_batches)
    trainer.fit(model)
    assert eval_calls("val_log_fit") == [
        ({f"val_log_fit{suffix(dl_idx)}": float(step)}, step + limit_batches * epoch)
        for epoch in range(max_epochs) for dl_idx in range(num_dataloaders)
        for step in eval_steps]
    recorder.calls.clear()
    trainer.validate(model, verbose=False)
    assert eval_calls("val_log_validate") == [
        ({f"val_log_validate{suffix(dl_idx)}": float(val)}, val)
        for dl_idx in range(num_dataloaders) for val in eval_steps]
    recorder.calls.clear()
    trainer.test(model, verbose=False)
    assert eval_calls("test_log") == [({f"test_log{suffix(dl_idx)}": float(val)}, val)
                                      for dl_idx in range(num_dataloaders) for val in eval_steps]


# ---------------------------------------------------------------- test_train_loop_logging.py


def test_log_metrics_epoch_step_values(tmp_path):
    """Step values at the index of the step (0, 1, ...), epoch values at the epoch's last step,
    each with ``epoch``."""

    class MyModel(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("foo", 0.0, on_step=True, on_epoch=True)
            return super().training_step(batch, batch_idx)

    recorder = Recorder()
    trainer = fulmen.Trainer(**_flags(tmp_path, limit_train_batches=2, limit_val_batches=0,
                                      max_epochs=2, log_every_n_steps=1, logger=recorder))
    trainer.fit(MyModel())
    assert recorder.calls == [  # Lightning: "epoch" again with foo_epoch at steps 1 and 3
        ({"foo_step": 0.0, "epoch": 0}, 0),
        ({"foo_step": 0.0, "epoch": 0}, 1),
        ({"foo_epoch": 0.0}, 1),
        ({"foo_step": 0.0, "epoch": 1}, 2),
        ({"foo_step": 0.0, "epoch": 1}, 3),
        ({"foo_epoch": 0.0}, 3),
    ]


def test_log_step_axis_under_accumulation_and_manual_optimization(tmp_path):
    """The step axis counts batches that ended an accumulation window; under manual
    optimization every batch (Lightning's ``_batches_that_stepped``)."""

    class Accumulating(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("i", float(batch_idx))
            return super().training_step(batch, batch_idx)

    recorder = Recorder()
    trainer = fulmen.Trainer(**_flags(tmp_path, limit_train_batches=6, limit_val_batches=0,
                                      max_epochs=1, log_every_n_steps=1, logger=recorder,
                                      accumulate_grad_batches=3))
    trainer.fit(Accumulating())
    assert [(c[0]["i"], c[1]) for c in recorder.calls] == [(2.0, 0), (5.0, 1)]

    class Manual(Accumulating):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            self.log("i", float(batch_idx))
            if batch_idx % 2:  # one optimizer step every second batch
                opt = self.optimizers()
                opt.zero_grad()
                self.manual_backward(self(batch).sum())
                opt.step()

    recorder = Recorder()
    trainer = fulmen.Trainer(**_flags(tmp_path, limit_train_batches=4, limit_val_batches=0,
                                      max_epochs=1, log_every_n_steps=1, logger=recorder))
    trainer.fit(Manual())
    assert [(c[0]["i"], c[1]) for c in recorder.calls] == [(0.0, 0), (1.0, 1), (2.0, 2),
                                                          (3.0, 3)]
    assert trainer.global_step == 2


# ---------------------------------------------------------------- test_logger_connector.py


@pytest.mark.parametrize("add_dataloader_idx", [False, True])
def test_auto_add_dataloader_idx(tmp_path, add_dataloader_idx):
    class TestModel(BoringModel):
        def val_dataloader(self) -> Any:
            dl = super().val_dataloader()
            return [dl, dl]

        def validation_step(self, *args: Any, **kwargs: Any) -> Any:
            output = super().validation_step(*args[:-1], **kwargs)
            name = "val_loss" if add_dataloader_idx else f"val_loss_custom_naming_{args[-1]}"
            self.log(name, output["x"], add_dataloader_idx=add_dataloader_idx)
            return output

    trainer = fulmen.Trainer(**_flags(tmp_path, fast_dev_run=2))
    trainer.loggers = [Recorder()]
    trainer.fit(TestModel())
    logged = trainer.logged_metrics
    if add_dataloader_idx:
        assert "val_loss/dataloader_idx_0" in logged
        assert "val_loss/dataloader_idx_1" in logged
    else:
        assert "val_loss_custom_naming_0" in logged
        assert "val_loss_custom_naming_1" in logged


def test_add_dataloader_idx_false_reduces_the_dataloaders_together(tmp_path):
    """One name for every dataloader: one value, the mean over all their batches."""

    class Together(BoringModel):
        def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
            self.log("v", float(dataloader_idx), add_dataloader_idx=False, batch_size=1)

    results = fulmen.Trainer(**_flags(tmp_path, logger=False, limit_val_batches=3)).validate(
        Together(), [DataLoader(RandomDataset(32, 8))] * 2, verbose=False)
    assert results == [{"v": 0.5}, {"v": 0.5}]


def test_name_with_dataloader_suffix_is_refused(tmp_path):
    class Suffixed(BoringModel):
        def validation_step(self, batch: Any, batch_idx: int) -> None:
            self.log("v/dataloader_idx_0", 1.0)

    with pytest.raises(ConfigurationError, match=r"appends itself.*add_dataloader_idx=False"):
        fulmen.Trainer(**_flags(tmp_path, logger=False)).validate(Suffixed(), verbose=False)


def test_enable_graph_and_sync_dist_group_warn_not_ignored(tmp_path):
    """Lightning runs them; fulmen logs the value (detached, reduced over every process) and
    says so."""
    class Graph(BoringModel):
        def validation_step(self, batch: Any, batch_idx: int) -> None:
            self.log("v", self(batch).sum(), enable_graph=True, sync_dist_group=object())

    trainer = fulmen.Trainer(**_flags(tmp_path, logger=False))
    with pytest.warns(UserWarning, match=r"self.log\('v', enable_graph=True, sync_dist_group=<"
                      r"object .*>\): fulmen stores logged values detached"):
        trainer.validate(Graph(), verbose=False)
    assert "v" in trainer.callback_metrics


# ---------------------------------------------------------------- files read back


class Labelled(BoringModel):
    def training_step(self, batch: Any, batch_idx: int) -> Any:
        out = super().training_step(batch, batch_idx)
        self.log("loss", out["loss"], on_step=True, on_epoch=True)
        return out

    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self.log("val", float(dataloader_idx))

    def val_dataloader(self) -> Any:
        return [DataLoader(RandomDataset(32, 4)), DataLoader(RandomDataset(32, 4))]


def _fit_labelled(tmp_path: Path, logger: Any) -> None:
    trainer = fulmen.Trainer(**_flags(tmp_path, limit_train_batches=3, max_epochs=2,
                                      log_every_n_steps=1, logger=logger,
                                      num_sanity_val_steps=0))
    trainer.fit(Labelled())


EXPECTED_STEPS = {"loss_step": [0, 1, 2, 3, 4, 5], "loss_epoch": [2, 5],
                  "val/dataloader_idx_0": [2, 5], "val/dataloader_idx_1": [2, 5]}


def test_csv_file_labels_steps_and_epochs(tmp_path):
    from fulmen.loggers import CSVLogger

    logger = CSVLogger(tmp_path)
    _fit_labelled(tmp_path, logger)
    with open(logger.metrics_file_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for name, steps in EXPECTED_STEPS.items():
        assert [int(r["step"]) for r in rows if r.get(name)] == steps, name
    epochs = {int(r["step"]): int(float(r["epoch"])) for r in rows}
    assert epochs == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1}
    assert {float(r["val/dataloader_idx_1"]) for r in rows if r.get("val/dataloader_idx_1")} \
        == {1.0}


def test_tensorboard_file_labels_steps_and_epochs(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fulmen.loggers import TensorBoardLogger

    logger = TensorBoardLogger(tmp_path)
    _fit_labelled(tmp_path, logger)
    events = EventAccumulator(logger.log_dir)
    events.Reload()
    for name, steps in EXPECTED_STEPS.items():
        assert [e.step for e in events.Scalars(name)] == steps, name
    epoch = {e.step: e.value for e in events.Scalars("epoch")}
    assert epoch == {0: 0.0, 1: 0.0, 2: 0.0, 3: 1.0, 4: 1.0, 5: 1.0}
