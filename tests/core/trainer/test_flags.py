"""Trainer flags: limits, intervals, stopping rules, fast_dev_run, datamodules and bad input."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch
from tiny_models import TinyData, TinyModule, lean, loader
from torch.utils.data import DataLoader, IterableDataset

import fulmen
from fulmen import ConfigurationError


class CountingModule(TinyModule):
    def __init__(self) -> None:
        super().__init__()
        self.counts = {"train": 0, "val": 0, "test": 0, "val_runs": 0}

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        self.counts["train"] += 1
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.counts["val"] += 1
        super().validation_step(batch, batch_idx)

    def on_validation_start(self) -> None:
        if not self.trainer.sanity_checking:
            self.counts["val_runs"] += 1

    def test_step(self, batch: Any, batch_idx: int) -> None:
        self.counts["test"] += 1
        super().test_step(batch, batch_idx)


def fit(**flags: Any) -> tuple[fulmen.Trainer, CountingModule]:
    model = CountingModule()
    trainer = fulmen.Trainer(**lean(**flags))
    trainer.fit(model, loader(n=80, batch_size=8), loader(n=32, batch_size=8))  # 10 / 4 batches
    return trainer, model


@pytest.mark.parametrize(("flags", "train", "val"), [
    ({"max_epochs": 1}, 10, 4),
    ({"max_epochs": 2, "limit_train_batches": 3}, 6, 8),
    ({"max_epochs": 1, "limit_train_batches": 0.5, "limit_val_batches": 0.5}, 5, 2),
    ({"max_epochs": 1, "limit_val_batches": 0}, 10, 0),
    ({"max_epochs": 3, "check_val_every_n_epoch": 2}, 30, 4),
    ({"max_epochs": 1, "val_check_interval": 0.5}, 10, 8),
    ({"max_epochs": 1, "val_check_interval": 5}, 10, 8),
    ({"max_epochs": 2, "val_check_interval": 15, "check_val_every_n_epoch": None}, 20, 4),
    ({"max_steps": 7, "max_epochs": 5}, 7, 0),
    ({"max_epochs": 1, "num_sanity_val_steps": 2}, 10, 6),
])
def test_batch_counts(flags, train, val):
    _, model = fit(**flags)
    assert (model.counts["train"], model.counts["val"]) == (train, val)


def test_fast_dev_run_runs_one_batch_and_writes_nothing(tmp_path):
    model = CountingModule()
    trainer = fulmen.Trainer(fast_dev_run=True, default_root_dir=tmp_path,
                             enable_progress_bar=False)
    trainer.fit(model, loader(n=80), loader(n=32))
    trainer.test(model, loader(n=32), verbose=False)
    assert model.counts == {"train": 1, "val": 1, "test": 1, "val_runs": 1}
    assert list(tmp_path.iterdir()) == []


def test_min_epochs_wins_over_early_stopping():
    class StopsAtOnce(fulmen.Callback):
        def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
            trainer.should_stop = True

    trainer = fulmen.Trainer(callbacks=[StopsAtOnce()], **lean(max_epochs=10, min_epochs=3))
    trainer.fit(TinyModule(), loader())
    assert trainer.current_epoch == 3


def test_max_time_stops_training():
    class Slow(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            time.sleep(0.02)
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(**lean(max_epochs=1000, max_time={"seconds": 1}))
    start = time.monotonic()
    trainer.fit(Slow(), loader())
    assert time.monotonic() - start < 10 and trainer.global_step < 1000


def test_datamodule_order_and_stages():
    data = TinyData()
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(TinyModule(), datamodule=data)
    trainer.validate(TinyModule(), datamodule=data, verbose=False)
    assert data.calls == ["prepare_data", "setup:fit", "teardown:fit", "prepare_data",
                          "setup:validate", "teardown:validate"]


def test_predict_returns_outputs_per_batch():
    inputs = DataLoader(torch.utils.data.TensorDataset(torch.randn(20, 8)), batch_size=8)
    predictions = fulmen.Trainer(**lean()).predict(TinyModule(), inputs)  # self(*batch)
    assert [p.shape for p in predictions] == [torch.Size([8, 2])] * 2 + [torch.Size([4, 2])]


def test_validate_and_test_return_metrics_and_log_a_table(caplog):
    caplog.set_level("INFO", logger="fulmen")
    trainer = fulmen.Trainer(**lean())
    results = trainer.test(TinyModule(), loader())
    assert list(results[0]) == ["test_acc"]
    out = caplog.text  # through the `fulmen` logger, not print
    assert "Test results" in out and "test_acc" in out


class Endless(IterableDataset):
    def __iter__(self) -> Any:
        while True:
            yield torch.randn(8), torch.tensor(1)


def test_iterable_datasets_without_length():
    trainer = fulmen.Trainer(**lean(max_steps=5))
    trainer.fit(TinyModule(), DataLoader(Endless(), batch_size=4))
    assert trainer.global_step == 5
    with pytest.raises(ConfigurationError, match="is a fraction, but the train dataloader has no "
                       "length"):
        fulmen.Trainer(**lean(max_steps=5, limit_train_batches=0.5)).fit(
            TinyModule(), DataLoader(Endless(), batch_size=4))


@pytest.mark.parametrize(("flags", "message"), [
    ({"max_epochs": -2}, r"Trainer\(max_epochs=-2\): expected an int >= 0, -1 for no limit"),
    ({"max_epochs": 2.5}, r"max_epochs=2.5"),
    ({"limit_train_batches": 1.5}, r"limit_train_batches=1.5\): give a number of batches"),
    ({"limit_val_batches": -1}, r"limit_val_batches=-1"),
    ({"val_check_interval": 0}, r"val_check_interval=0\)"),
    ({"gradient_clip_algorithm": "l2"}, r"use 'norm' or 'value'"),
    ({"max_time": "1 hour"}, r"max_time='1 hour'\): use 'DD:HH:MM:SS'"),
    ({"callbacks": [object()]}, r"callbacks got a object; it takes fulmen.Callback objects"),
    ({"logger": "tbx"}, r"logger='tbx' is not a registered logger name. Did you mean"),
    ({"logger": 1.5}, r"logger=1.5 \(float\); use True, False, a registered logger name"),
    ({"fast_dev_run": -1}, r"fast_dev_run=-1"),
])
def test_bad_flags(flags, message):
    with pytest.raises(ConfigurationError, match=message):
        fulmen.Trainer(**flags)


def test_val_check_interval_larger_than_the_epoch():
    with pytest.raises(ConfigurationError, match=r"val_check_interval=50 is larger than the epoch "
                       r"\(10 training batches\)"):
        fit(max_epochs=1, val_check_interval=50)


def test_empty_dataloaders():
    """Lightning warns of a dataloader with no batch and skips it (a fit trains nothing, a test
    returns []); no data at all is an error, as in Lightning."""
    empty = DataLoader(torch.utils.data.TensorDataset(torch.ones(0, 8)), batch_size=4)
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    with pytest.warns(UserWarning, match=r"Total length of `DataLoader` across ranks is zero.*"
                      r"the training dataloader has 0 batches"):
        trainer.fit(TinyModule(), empty)
    assert trainer.global_step == 0
    with pytest.warns(UserWarning, match=r"Total length of `DataLoader` across ranks is zero"):
        assert fulmen.Trainer(**lean()).test(TinyModule(), empty) == []
    with pytest.warns(UserWarning, match=r"Total length of `DataLoader` across ranks is zero"):
        assert fulmen.Trainer(**lean()).predict(TinyModule(), empty) is None
    assert fulmen.Trainer(**lean(limit_val_batches=0)).validate(TinyModule(), loader()) == []
    with pytest.raises(ConfigurationError, match=r"trainer.fit found no training data"):
        fulmen.Trainer(**lean()).fit(TinyModule())
    with pytest.raises(ConfigurationError, match=r"trainer.test\(\) needs a model"):
        fulmen.Trainer(**lean()).test()
    with pytest.raises(ConfigurationError, match=r"got a Linear; it takes a fulmen.Module"):
        fulmen.Trainer(**lean()).fit(torch.nn.Linear(2, 2), loader())


def test_seed_everything_makes_runs_repeatable():
    def run() -> torch.Tensor:
        fulmen.seed_everything(123)
        model = TinyModule(dropout=0.2)
        fulmen.Trainer(**lean(max_epochs=2)).fit(model, loader(shuffle=True))
        return model.net[0].weight.detach().clone()

    assert torch.equal(run(), run())
    with pytest.raises(ConfigurationError, match="a seed is an int from 0 to"):
        fulmen.seed_everything(-1)


def test_workers_are_seeded_per_worker_and_rank():
    class Seeds(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> torch.Tensor:
            return torch.tensor([torch.initial_seed() % 2**31, torch.randint(0, 10**6, ()).item()])

    def worker_seeds() -> list[int]:
        fulmen.seed_everything(5, workers=True)
        batches = DataLoader(Seeds(), batch_size=2, num_workers=2)
        from fulmen.trainer.data import seed_workers

        seed_workers(batches, rank=0)
        return [int(b[0][0]) for b in batches]

    first = worker_seeds()
    assert first == worker_seeds()  # repeatable
    assert len(set(first)) == 2  # distinct per worker
