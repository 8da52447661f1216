"""Lightning's ``tests_pytorch/callbacks/test_prediction_writer.py``, ported.

Differences, on purpose: Lightning patches the writer's methods with ``Mock``; here the writer
records its calls. ``batch_indices`` come from the predict loader's batch sampler when its order
is fixed (a sequential or non-shuffling distributed sampler), which covers Lightning's cases
(see docs/migrating.md). Plus: ``interval`` is Lightning's ``WriteInterval``.
"""

from __future__ import annotations

from typing import Any

import pytest
from torch.utils.data import DataLoader

from fulmen import ConfigurationError, Trainer
from fulmen.callbacks import BasePredictionWriter
from fulmen.callbacks.prediction_writer import WriteInterval
from fulmen.demos.boring_classes import BoringModel, RandomDataset


class DummyPredictionWriter(BasePredictionWriter):
    def __init__(self, write_interval: str) -> None:
        super().__init__(write_interval)
        self.batch_calls: list[tuple[Any, ...]] = []
        self.epoch_calls: list[tuple[Any, ...]] = []

    def write_on_batch_end(self, *args: Any) -> None:
        self.batch_calls.append(args)

    def write_on_epoch_end(self, *args: Any) -> None:
        self.epoch_calls.append(args)


def _trainer(tmp_path: Any, writer: BasePredictionWriter) -> Trainer:
    return Trainer(default_root_dir=tmp_path, logger=False, limit_predict_batches=4,
                   callbacks=writer, enable_progress_bar=False, enable_model_summary=False)


def test_prediction_writer_invalid_write_interval() -> None:
    """Test that configuring an unknown interval name raises an error."""
    with pytest.raises(ConfigurationError, match=r"`write_interval` should be one of \['batch"):
        DummyPredictionWriter("something")


def test_write_interval_is_lightnings_enum() -> None:
    writer = DummyPredictionWriter("batch_and_epoch")
    assert isinstance(writer.interval, WriteInterval) and writer.interval == "batch_and_epoch"
    assert writer.interval.on_batch and writer.interval.on_epoch
    assert WriteInterval("batch").on_batch and not WriteInterval("batch").on_epoch
    assert WriteInterval.EPOCH.on_epoch and not WriteInterval.EPOCH.on_batch


@pytest.mark.parametrize(("interval", "batches", "epochs"),
                         [("batch_and_epoch", 4, 1), ("batch", 4, 0), ("epoch", 0, 1)])
@pytest.mark.parametrize("return_predictions", [True, False])
def test_prediction_writer_hook_call_intervals(tmp_path: Any, interval: str, batches: int,
                                               epochs: int, return_predictions: bool) -> None:
    """The `write_on_batch_end` and `write_on_epoch_end` hooks get invoked based on the
    defined interval."""
    dataloader = DataLoader(RandomDataset(32, 64))
    writer = DummyPredictionWriter(interval)
    results = _trainer(tmp_path, writer).predict(BoringModel(), dataloaders=dataloader,
                                                 return_predictions=return_predictions)
    if return_predictions:
        assert len(results) == 4
    assert len(writer.batch_calls) == batches
    assert len(writer.epoch_calls) == epochs


@pytest.mark.parametrize("num_workers", [0, 2])
def test_prediction_writer_batch_indices(tmp_path: Any, num_workers: int) -> None:
    dataloader = DataLoader(RandomDataset(32, 64), batch_size=4, num_workers=num_workers)
    model = BoringModel()
    writer = DummyPredictionWriter("batch_and_epoch")
    trainer = _trainer(tmp_path, writer)
    trainer.predict(model, dataloaders=dataloader)
    expected = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert [(c[0], c[1], c[3], c[5], c[6]) for c in writer.batch_calls] == [
        (trainer, model, indices, i, 0) for i, indices in enumerate(expected)]
    [(epoch_trainer, epoch_model, predictions, indices)] = writer.epoch_calls
    assert (epoch_trainer, epoch_model, indices) == (trainer, model, [expected])
    assert len(predictions) == 4


def test_batch_level_batch_indices(tmp_path: Any) -> None:
    """Test that batch_indices are returned when `return_predictions=False`."""
    writer = DummyPredictionWriter("batch")
    model = BoringModel()
    dataloader = DataLoader(RandomDataset(32, 64), batch_size=4)
    trainer = _trainer(tmp_path, writer)
    trainer.predict(model, dataloaders=dataloader, return_predictions=False)
    assert [c[3] for c in writer.batch_calls] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]


def test_shuffled_loader_gives_no_batch_indices(tmp_path: Any) -> None:
    """Deliberate difference: a predict loader that shuffles gives no sample indices (Lightning
    records the shuffled ones)."""
    writer = DummyPredictionWriter("batch_and_epoch")
    dataloader = DataLoader(RandomDataset(32, 64), batch_size=4, shuffle=True)
    _trainer(tmp_path, writer).predict(BoringModel(), dataloaders=dataloader)
    assert [c[3] for c in writer.batch_calls] == [None] * 4
    assert writer.epoch_calls[0][3] == [[]]
