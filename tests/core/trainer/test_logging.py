"""self.log semantics: defaults per hook, weighted epoch means, names, errors, sync_dist."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from tiny_models import TinyModule, lean, loader
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen import ConfigurationError
from fulmen.loggers import Logger
from fulmen_strategies import SingleDeviceStrategy


class MemoryLogger(Logger):
    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[str, float]]] = []
        self.hparams: dict[str, Any] = {}

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.rows.append((step, dict(metrics)))

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        self.hparams.update(params)


def uneven_loader() -> DataLoader:
    """Batches of 4, 4 and 2 samples whose per-sample values are 1, 2, 3."""
    x = torch.tensor([1.0] * 4 + [2.0] * 4 + [3.0] * 2).unsqueeze(1)
    return DataLoader(TensorDataset(x), batch_size=4)


class Logs(fulmen.Module):
    def __init__(self, **log_kwargs: Any) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.kwargs = log_kwargs

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        (x,) = batch
        self.log("value", x.mean(), **self.kwargs)
        return (self.w * x).sum()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        (x,) = batch
        self.log("val_value", x.mean())

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.0)


def test_training_step_logs_per_step_by_default():
    logger = MemoryLogger()
    trainer = fulmen.Trainer(**lean(max_epochs=1, logger=logger, log_every_n_steps=1))
    trainer.fit(Logs(), uneven_loader())
    assert [step for step, _ in logger.rows] == [0, 1, 2]  # Lightning: the step's index
    assert [row["value"] for _, row in logger.rows] == [1.0, 2.0, 3.0]
    assert float(trainer.callback_metrics["value"]) == 3.0


def test_epoch_values_are_means_weighted_by_batch_size():
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(Logs(on_step=False, on_epoch=True), uneven_loader(), uneven_loader())
    expected = (4 * 1 + 4 * 2 + 2 * 3) / 10
    assert float(trainer.callback_metrics["value"]) == pytest.approx(expected)
    assert float(trainer.callback_metrics["val_value"]) == pytest.approx(expected)


def test_explicit_batch_size_and_other_reductions():
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(Logs(on_step=False, on_epoch=True, batch_size=1), uneven_loader())
    assert float(trainer.callback_metrics["value"]) == pytest.approx(2.0)
    for fx, expected in (("max", 3.0), ("min", 1.0), ("sum", 6.0), (torch.max, 3.0)):
        trainer = fulmen.Trainer(**lean(max_epochs=1))
        trainer.fit(Logs(on_step=False, on_epoch=True, reduce_fx=fx), uneven_loader())
        assert float(trainer.callback_metrics["value"]) == expected


def test_step_and_epoch_get_suffixed_names():
    logger = MemoryLogger()
    trainer = fulmen.Trainer(**lean(max_epochs=1, logger=logger, log_every_n_steps=1))
    trainer.fit(Logs(on_step=True, on_epoch=True, prog_bar=True), uneven_loader())
    metrics = trainer.callback_metrics
    assert {"value", "value_step", "value_epoch"} <= set(metrics)
    assert float(metrics["value_step"]) == 3.0
    assert float(metrics["value_epoch"]) == pytest.approx(1.8)
    assert logger.rows[-1][1]["value_epoch"] == pytest.approx(1.8)
    assert set(trainer.progress_bar_metrics) == {"value_step", "value_epoch"}
    assert trainer.logged_metrics["value_epoch"] == pytest.approx(1.8)


def test_logger_false_keeps_values_out_of_loggers_but_in_callback_metrics():
    logger = MemoryLogger()
    trainer = fulmen.Trainer(**lean(max_epochs=1, logger=logger, log_every_n_steps=1))
    trainer.fit(Logs(logger=False), uneven_loader())
    assert all("value" not in row for _, row in logger.rows)
    assert "value" in trainer.callback_metrics


def test_log_every_n_steps_controls_logger_calls():
    logger = MemoryLogger()
    trainer = fulmen.Trainer(**lean(max_epochs=1, logger=logger, log_every_n_steps=2))
    six_batches = DataLoader(TensorDataset(torch.ones(48, 1)), batch_size=8)
    trainer.fit(Logs(), six_batches)
    # the 2nd, 4th and 6th step, labelled with their index (Lightning's axis)
    assert [step for step, row in logger.rows if "value" in row] == [1, 3, 5]


@pytest.mark.parametrize(("value", "message"), [
    ("text", "the value must be a number, a scalar tensor or a torchmetrics Metric, not str"),
    ([1, 2], "not list"),
    (torch.ones(3), r"must be a scalar, got a tensor of shape \(3,\)"),
])
def test_logging_bad_values_is_a_configuration_error(value, message):
    class Bad(Logs):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            self.log("bad", value)
            return super().training_step(batch, batch_idx)

    with pytest.raises(ConfigurationError, match=message):
        fulmen.Trainer(**lean(max_epochs=1)).fit(Bad(), uneven_loader())


def test_logging_where_it_is_not_supported():
    class Bad(TinyModule):
        def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
            self.log("nope", 1.0)

    with pytest.raises(ConfigurationError, match=r"self.log\('nope', ...\) is not supported in "
                       r"predict_step; log from one of: "):
        fulmen.Trainer(**lean()).predict(Bad(), loader(n=8))
    # not attached to a Trainer: a warning, so that a *_step can be tested alone (Lightning)
    with pytest.warns(UserWarning, match="`self.trainer` reference is not registered"):
        TinyModule().log("x", 1.0)
    attached = TinyModule()
    trainer = fulmen.Trainer(**lean())
    trainer.fit(attached, loader(n=8))
    with pytest.raises(fulmen.FulmenError, match="outside a Trainer hook"):
        attached.log("x", 1.0)  # attached, but no hook is running


def test_on_step_in_validation_logs_per_batch_with_suffixes():
    """Lightning allows on_step=True in validation_step: ``v_step`` goes to the logger once per
    batch (step = the batch count of that validation run), ``v_epoch`` at the end."""
    class StepInVal(TinyModule):
        def validation_step(self, batch: Any, batch_idx: int) -> None:
            self.log("v", float(batch_idx), on_step=True, on_epoch=True)

    memory = MemoryLogger()
    trainer = fulmen.Trainer(**lean(logger=memory))
    trainer.validate(StepInVal(), loader(n=24), verbose=False)
    steps = [(step, row["v_step"]) for step, row in memory.rows if "v_step" in row]
    assert steps == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert float(trainer.callback_metrics["v_epoch"]) == 1.0
    assert any("v_epoch" in row for _, row in memory.rows)


def test_bad_reduce_fx_is_refused():
    with pytest.raises(ConfigurationError, match=r"reduce_fx='median'\): use one of"):
        fulmen.Trainer(**lean(max_epochs=1)).fit(Logs(reduce_fx="median"), uneven_loader())


def test_log_dict_and_numbers():
    class Dict(Logs):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            self.log_dict({"a": 1, "b": 2.5})
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(Dict(), uneven_loader())
    assert (float(trainer.callback_metrics["a"]), float(trainer.callback_metrics["b"])) == (1, 2.5)


def test_sync_dist_goes_through_strategy_reduce():
    calls: list[str] = []

    class Recording(SingleDeviceStrategy):
        def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
            calls.append(reduce_op)
            return tensor * 10

    trainer = fulmen.Trainer(strategy=Recording(), **lean(max_epochs=1))
    trainer.fit(Logs(on_step=False, on_epoch=True, sync_dist=True), uneven_loader())
    # a synced mean is reduced as Lightning does: the weighted sum and the batch count, each
    # through the strategy, then divided (so the fake's factor of 10 cancels)
    assert calls == ["mean", "mean"]
    assert float(trainer.callback_metrics["value"]) == pytest.approx(1.8)


def test_torchmetrics_metric_objects_are_computed_per_epoch():
    torchmetrics = pytest.importorskip("torchmetrics")

    class WithMetric(TinyModule):
        def __init__(self) -> None:
            super().__init__()
            self.acc = torchmetrics.classification.MulticlassAccuracy(num_classes=2,
                                                                      average="micro")

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            x, y = batch
            self.acc(self(x).argmax(1), y)
            self.log("val_acc", self.acc)

    model = WithMetric()
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    results = trainer.validate(model, loader(n=32), verbose=False)
    x, y = loader(n=32).dataset.tensors
    expected = float((model(x).argmax(1) == y).float().mean())
    assert results[0]["val_acc"] == pytest.approx(expected)


def test_hyperparameters_reach_the_logger():
    logger = MemoryLogger()
    fulmen.Trainer(**lean(max_epochs=1, logger=logger)).fit(TinyModule(lr=0.05), loader(n=8))
    assert logger.hparams == {"lr": 0.05, "hidden": 16, "dropout": 0.0, "optimizer": "sgd"}


def test_all_gather_and_rank_zero_only_logging_from_the_guide():
    class Reduced(TinyModule):
        def __init__(self) -> None:
            super().__init__()
            self.outputs: list[torch.Tensor] = []

        def test_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            out = self(batch[0]).sum()
            self.outputs.append(out)
            return out

        def on_test_epoch_end(self) -> None:
            mean = torch.mean(self.all_gather(self.outputs))
            self.outputs.clear()
            if self.trainer.is_global_zero:
                self.log("my_reduced_metric", mean, rank_zero_only=True)

    results = fulmen.Trainer(**lean()).test(Reduced(), loader(n=16), verbose=False)
    assert "my_reduced_metric" in results[0]


def test_multiple_val_dataloaders_get_suffixes():
    trainer = fulmen.Trainer(**lean())
    results = trainer.validate(TinyModule(), [loader(n=8), loader(n=16, seed=3)], verbose=False)
    assert len(results) == 2
    assert set(results[0]) == {"val_loss/dataloader_idx_0", "val_acc/dataloader_idx_0"}
    assert set(results[1]) == {"val_loss/dataloader_idx_1", "val_acc/dataloader_idx_1"}
