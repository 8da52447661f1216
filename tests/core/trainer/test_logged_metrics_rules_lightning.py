"""What ``self.log`` leaves in ``trainer.callback_metrics``, ``logged_metrics`` and
``progress_bar_metrics``, by Lightning 2.6's rules (its ``_ResultCollection`` and logger
connector), each case compared with the real Lightning 2.6.6 run side by side.

Ported from ``tests_pytorch/trainer/logging_/test_logger_connector.py``:

- ``test_metrics_reset``: every torchmetrics ``Metric`` logged in a stage is reset once at the end
  of that stage's epoch. Lightning wraps ``reset`` in a ``mock.Mock``; here a ``Metric`` subclass
  counts its resets (real torchmetrics objects, no patching). Lightning's ``AveragePrecision``
  is replaced by a second counting metric (``torchmetrics.classification`` is not needed for
  what is checked).
- ``test_logged_metrics_has_logged_epoch_value``.

Not in Lightning's tests:

- the same name logged from a step and from the epoch-end hook (Lightning: the epoch-end value
  wins where both give one; fulmen warns once and does the same), including a Lightning 1.x
  module rewritten by ``fulmen migrate``, whose ``validation_epoch_end`` logs the name its
  ``validation_step`` logs;
- a ``Metric`` logged ``on_step`` only does not accumulate across epochs;
- ``logged_metrics`` holds tensors under ``_step``/``_epoch`` names, with or without a logger.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen.loggers import CSVLogger

torchmetrics = pytest.importorskip("torchmetrics")


def _flags(tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    flags: dict[str, Any] = dict(default_root_dir=tmp_path, max_epochs=2, limit_train_batches=3,
                                 limit_val_batches=2, enable_progress_bar=False,
                                 enable_model_summary=False, enable_checkpointing=False,
                                 logger=False, num_sanity_val_steps=0)
    flags.update(kwargs)
    return flags


class StepAndEpochEnd(BoringModel):
    """Logs ``x`` from training_step and on_train_epoch_end, ``v`` from validation_step and
    on_validation_epoch_end."""

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        out = super().training_step(batch, batch_idx)
        self.log("x", float(batch_idx))
        self.log("loss", out["loss"], on_step=True, on_epoch=True, prog_bar=True)
        return out

    def on_train_epoch_end(self) -> None:
        self.log("x", 100.0)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("v", float(batch_idx))

    def on_validation_epoch_end(self) -> None:
        self.log("v", 50.0)


@pytest.mark.parametrize("with_logger", [False, True])
def test_a_name_logged_from_a_step_and_its_epoch_end(tmp_path, with_logger):
    """Lightning 2.6.6 gives these keys and values, as tensors (progress bar: floats)."""
    logger = CSVLogger(tmp_path) if with_logger else False
    trainer = fulmen.Trainer(**_flags(tmp_path, logger=logger))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the warning is the next test's)
        trainer.fit(StepAndEpochEnd())
    callback, logged = trainer.callback_metrics, trainer.logged_metrics
    assert set(callback) == {"loss", "loss_epoch", "loss_step", "v", "x"}
    assert set(logged) == {"loss_epoch", "loss_step", "v", "x"}
    assert all(type(v) is torch.Tensor for v in [*callback.values(), *logged.values()])
    assert float(callback["v"]) == float(logged["v"]) == 50.0
    assert float(callback["x"]) == float(logged["x"]) == 100.0
    assert callback["loss"] == callback["loss_epoch"] == logged["loss_epoch"]
    assert trainer.progress_bar_metrics == {"loss_step": float(logged["loss_step"]),
                                            "loss_epoch": float(logged["loss_epoch"])}


def test_the_warning_for_a_shared_name_comes_once(tmp_path):
    class Shared(BoringModel):
        def validation_step(self, batch: Any, batch_idx: int) -> None:
            self.log("shared_once", float(batch_idx))

        def on_validation_epoch_end(self) -> None:
            self.log("shared_once", 50.0)

    trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(Shared())
    shared = [str(w.message) for w in caught if "shared_once" in str(w.message)]
    assert len(shared) == 1
    assert shared[0].startswith(
        "self.log('shared_once') is called from both validation_step and "
        "on_validation_epoch_end: where both give a value, the one logged from "
        "on_validation_epoch_end is the one callbacks, the progress bar and the loggers see "
        "(Lightning's rule). Use different names to keep both")
    assert float(trainer.callback_metrics["shared_once"]) == 50.0


OLD_MODULE = '''\
import torch
import pytorch_lightning as pl
from torch.utils.data import DataLoader


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).pow(2).mean()
        self.log("val_loss", loss)
        return loss

    def validation_epoch_end(self, outputs):
        self.log("val_loss", torch.stack(outputs).mean() + 1000)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(torch.randn(8, 4), batch_size=4)

    def val_dataloader(self):
        return DataLoader(torch.randn(12, 4), batch_size=4)
'''


def test_a_migrated_one_x_module_logging_one_name_twice_fits(tmp_path):
    """``fulmen migrate`` turns ``validation_epoch_end(outputs)`` into ``on_validation_epoch_end``;
    the module then logs ``val_loss`` from both hooks, which Lightning 2.6 runs: so does fulmen,
    and the epoch-end value is the one monitored."""
    from fulmen.dropin.migrate import migrate_source

    result = migrate_source(OLD_MODULE)
    assert "def on_validation_epoch_end(self):" in result.new
    namespace: dict[str, Any] = {"__name__": "migrated"}
    exec(compile(result.new, str(tmp_path / "migrated.py"), "exec"), namespace)
    checkpoint = fulmen.callbacks.ModelCheckpoint(dirpath=tmp_path, monitor="val_loss")
    trainer = fulmen.Trainer(**_flags(tmp_path, callbacks=[checkpoint],
                                      enable_checkpointing=True))
    with pytest.warns(RuntimeWarning, match=r"self.log\('val_loss'\) is called from both"):
        trainer.fit(namespace["Model"]())
    assert trainer.current_epoch == 2
    assert float(trainer.callback_metrics["val_loss"]) > 1000
    assert float(checkpoint.best_model_score) > 1000


class CountingSum(torchmetrics.SumMetric):
    """A SumMetric that counts its resets."""

    def __init__(self) -> None:
        super().__init__()
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1
        super().reset()


def test_a_metric_logged_per_step_only_does_not_accumulate_across_epochs(tmp_path):
    """Lightning resets every logged Metric at the epoch's end, whatever ``on_epoch`` says: at
    each epoch's start both metrics have no update (Lightning 2.6.6: the same counts)."""

    class Model(BoringModel):
        def __init__(self) -> None:
            super().__init__()
            self.step_only, self.both = torchmetrics.SumMetric(), torchmetrics.SumMetric()
            self.counts: list[tuple[int, int]] = []

        def on_train_epoch_start(self) -> None:
            self.counts.append((self.step_only.update_count, self.both.update_count))

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.step_only(torch.tensor(float(batch_idx + 1)))
            self.log("s", self.step_only, on_step=True, on_epoch=False)
            self.both(torch.tensor(float(batch_idx + 1)))
            self.log("m", self.both, on_step=True, on_epoch=True)
            return super().training_step(batch, batch_idx)

    model = Model()
    trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=3))
    trainer.fit(model)
    assert model.counts == [(0, 0), (0, 0), (0, 0)]
    assert model.step_only.update_count == 0  # reset at the last epoch's end too
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    assert metrics == {"s": 3.0, "m_step": 3.0, "m_epoch": 6.0, "m": 6.0}
    assert {k: float(v) for k, v in trainer.logged_metrics.items()} == {
        "s": 3.0, "m_step": 3.0, "m_epoch": 6.0}


def test_metrics_reset(tmp_path):
    """Lightning's test: metrics are reset once at the end of the train/val/test epoch."""

    class TestModel(BoringModel):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(32, 1)

        def setup(self, stage: str) -> None:
            fn = self.fn = stage  # Lightning reads trainer.state.fn in the steps
            if fn == "fit":
                for stage in ("train", "validate"):
                    self.add_module(f"acc_{fn}_{stage}", CountingSum())
                    self.add_module(f"ap_{fn}_{stage}", CountingSum())
            else:
                self.add_module(f"acc_{fn}_{fn}", CountingSum())
                self.add_module(f"ap_{fn}_{fn}", CountingSum())

        def forward(self, x: Any) -> Any:
            return self.layer(x)

        def _step(self, batch: Any, stage: str) -> Any:
            fn = self.fn
            logits = self(batch)
            loss = logits.sum()
            self.log(f"loss/{fn}_{stage}", loss)
            acc = self._modules[f"acc_{fn}_{stage}"]
            ap = self._modules[f"ap_{fn}_{stage}"]
            preds = torch.rand(len(batch))
            acc(preds)
            ap(preds)
            # Metric.forward resets (and restores) the state: count only what follows
            acc.resets = ap.resets = 0
            self.log(f"acc/{fn}_{stage}", acc)
            self.log(f"ap/{fn}_{stage}", ap)
            return loss

        def training_step(self, batch: Any, batch_idx: int, *args: Any, **kwargs: Any) -> Any:
            return self._step(batch, "train")

        def validation_step(self, batch: Any, batch_idx: int, *args: Any, **kwargs: Any) -> Any:
            if self.trainer.sanity_checking:
                return None
            return self._step(batch, "validate")

        def test_step(self, batch: Any, batch_idx: int, *args: Any, **kwargs: Any) -> Any:
            return self._step(batch, "test")

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
            lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
            return [optimizer], [lr_scheduler]

        def train_dataloader(self) -> DataLoader:
            return DataLoader(RandomDataset(32, 64))

        def val_dataloader(self) -> DataLoader:
            return DataLoader(RandomDataset(32, 64))

        def test_dataloader(self) -> DataLoader:
            return DataLoader(RandomDataset(32, 64))

    def _assert_called(model: TestModel, fn: str, stage: str) -> None:
        assert model._modules[f"acc_{fn}_{stage}"].resets == 1
        assert model._modules[f"ap_{fn}_{stage}"].resets == 1

    model = TestModel()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, limit_train_batches=2,
                             limit_val_batches=2, limit_test_batches=2, max_epochs=1,
                             enable_progress_bar=False, num_sanity_val_steps=2,
                             enable_checkpointing=False)
    trainer.fit(model)
    _assert_called(model, "fit", "train")
    _assert_called(model, "fit", "validate")
    trainer.validate(model, verbose=False)
    _assert_called(model, "validate", "validate")
    trainer.test(model, verbose=False)
    _assert_called(model, "test", "test")


@pytest.mark.parametrize("logger", [False, True])
def test_logged_metrics_has_logged_epoch_value(tmp_path, logger):
    """Lightning's test: a user's ``epoch`` is not overridden by the one added for loggers."""

    class TestModel(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("epoch", -batch_idx, logger=True)
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(default_root_dir=tmp_path, limit_train_batches=2,
                             limit_val_batches=0, max_epochs=1,
                             logger=CSVLogger(tmp_path) if logger else False,
                             enable_progress_bar=False)
    trainer.fit(TestModel())
    assert trainer.logged_metrics == {"epoch": -1}
    assert type(trainer.logged_metrics["epoch"]) is torch.Tensor


def test_logged_metrics_are_kept_at_every_step_without_a_logger(tmp_path):
    """Lightning updates ``logged_metrics`` at every batch, logger or not (read in a callback
    between logging steps)."""
    seen: list[float] = []

    class Reader(fulmen.Callback):
        def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
            seen.append(float(trainer.logged_metrics["i"]))

    class Model(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("i", float(batch_idx))
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=1, callbacks=[Reader()],
                                      log_every_n_steps=50))
    trainer.fit(Model())
    assert seen == [0.0, 1.0, 2.0]


def test_log_from_the_hooks_inside_a_training_step(tmp_path):
    """Lightning's ``_FxValidator`` lets ``optimizer_step``, ``optimizer_zero_grad``,
    ``backward`` and ``configure_gradient_clipping`` log (per step by default), from the first
    batch on (a part of ``test_fx_validator_integration``; Lightning 2.6.6 gives these keys)."""
    logged_at: list[int] = []

    class Model(BoringModel):
        def configure_gradient_clipping(self, optimizer: Any, gradient_clip_val: Any = None,
                                        gradient_clip_algorithm: Any = None) -> None:
            self.log("clip", 1.0)

        def optimizer_step(self, *args: Any, **kwargs: Any) -> None:
            self.log("ostep", float(self.trainer.global_step))
            logged_at.append(self.trainer.global_step)
            super().optimizer_step(*args, **kwargs)

        def optimizer_zero_grad(self, *args: Any, **kwargs: Any) -> None:
            self.log("zero_grad", 3.0)
            super().optimizer_zero_grad(*args, **kwargs)

        def backward(self, loss: Any, *args: Any, **kwargs: Any) -> None:
            self.log("bw", 4.0)
            super().backward(loss, *args, **kwargs)

    trainer = fulmen.Trainer(**_flags(tmp_path, max_epochs=1, limit_val_batches=0))
    trainer.fit(Model())
    assert logged_at == [0, 1, 2]
    assert sorted(trainer.callback_metrics) == ["bw", "clip", "ostep", "zero_grad"]
    assert float(trainer.callback_metrics["ostep"]) == 2.0
