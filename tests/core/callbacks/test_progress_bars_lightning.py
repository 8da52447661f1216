"""Lightning's ``tests_pytorch/callbacks/progress/test_tqdm_progress_bar.py`` and
``test_rich_progress_bar.py`` (the representative cases), ported to fulmen.

Deliberate differences:
- Lightning swaps its ``Tqdm`` class with ``mock.patch``; here a recording bar class is handed
  out by overriding the public ``init_*_tqdm`` methods (what Lightning's docs suggest for
  customising bars).
- Bars redraw (and read metrics) at most every ``min_refresh_seconds``; the position ``n`` is
  still set for every ``refresh_rate`` batch, so the recorded positions match Lightning's.
- Without a terminal fulmen draws no bars and prints one line per epoch
  (``TQDMProgressBar(interactive=False)``); the tests force ``interactive=True`` where they
  inspect bars.
- ``TQDM_REFRESH_RATE`` / Colab defaults and the rich "not installed" errors are not ported:
  fulmen reads no such variable, and rich and tqdm are dependencies.
"""

from __future__ import annotations

import pickle
from io import StringIO

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import (
    ModelCheckpoint,
    ProgressBar,
    RichProgressBar,
    RichProgressBarTheme,
    TQDMProgressBar,
)
from fulmen.callbacks.tqdm_progress import Tqdm, format_num
from fulmen.loggers import CSVLogger


class RecordingTqdm(Tqdm):
    """Records every position, total and description the progress bar sets."""

    def __init__(self, *args, **kwargs):
        self.n_values, self.total_values, self.descriptions = [], [], []
        super().__init__(*args, **kwargs)
        self.n_values, self.total_values, self.descriptions = [], [], []

    def __setattr__(self, name, value):
        if name == "n" and "n_values" in self.__dict__ and (
                not self.n_values or value != self.n_values[-1]):
            self.n_values.append(value)
        if name == "total" and "total_values" in self.__dict__:
            self.total_values.append(value)
        super().__setattr__(name, value)

    def set_description(self, *args, **kwargs):
        super().set_description(*args, **kwargs)
        self.descriptions.append(self.desc)


class RecordingBar(TQDMProgressBar):
    def __init__(self, **kwargs):
        super().__init__(interactive=True, **kwargs)

    def _new(self, desc, position, leave, smoothing=0.3):
        return RecordingTqdm(desc=desc, position=position, disable=not self.draws_bars,
                             leave=leave, file=StringIO(), smoothing=smoothing)


def Trainer(**kwargs):
    kwargs.setdefault("logger", False)
    kwargs.setdefault("enable_checkpointing", False)
    kwargs.setdefault("enable_model_summary", False)
    return fulmen.Trainer(**kwargs)


@pytest.mark.parametrize("pbar", [TQDMProgressBar(refresh_rate=0), TQDMProgressBar()])
def test_tqdm_progress_bar_on(tmp_path, pbar):
    trainer = Trainer(default_root_dir=tmp_path, callbacks=pbar)
    bars = [c for c in trainer.callbacks if isinstance(c, ProgressBar)]
    assert len(bars) == 1 and bars[0] is trainer.progress_bar_callback


def test_tqdm_progress_bar_off(tmp_path):
    trainer = Trainer(default_root_dir=tmp_path, enable_progress_bar=False)
    assert not [c for c in trainer.callbacks if isinstance(c, ProgressBar)]


def test_tqdm_progress_bar_misconfiguration():
    callbacks = [TQDMProgressBar(), TQDMProgressBar(), ModelCheckpoint(dirpath="../trainer")]
    with pytest.raises(ConfigurationError, match=r"^You added multiple progress bar callbacks"):
        Trainer(callbacks=callbacks, enable_checkpointing=True)
    with pytest.raises(ConfigurationError,
                       match=r"enable_progress_bar=False` but found `TQDMProgressBar"):
        Trainer(callbacks=TQDMProgressBar(), enable_progress_bar=False)
    # fulmen's addition: Lightning runs a negative rate with the bars off; fulmen too, warning
    with pytest.warns(UserWarning, match=r"refresh_rate=-1\): a negative rate turns the bars off"):
        assert TQDMProgressBar(refresh_rate=-1).refresh_rate == 0


@pytest.mark.parametrize("num_dl", [1, 2])
def test_tqdm_progress_bar_totals(tmp_path, num_dl):
    class CustomModel(BoringModel):
        def _get_dataloaders(self):
            dls = [DataLoader(RandomDataset(32, 64)), DataLoader(RandomDataset(32, 64))]
            return dls[0] if num_dl == 1 else dls

        def val_dataloader(self):
            return self._get_dataloaders()

        def test_dataloader(self):
            return self._get_dataloaders()

        def predict_dataloader(self):
            return self._get_dataloaders()

        def validation_step(self, batch, batch_idx, dataloader_idx=0):
            return

        def test_step(self, batch, batch_idx, dataloader_idx=0):
            return

        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return

    model = CustomModel()
    sanity = []

    class SanityBar(RecordingBar):
        def init_sanity_tqdm(self):
            sanity.append(super().init_sanity_tqdm())
            return sanity[-1]

    # fulmen runs no sanity check without training batches (Lightning does): one batch here
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=1,
                      num_sanity_val_steps=4, callbacks=SanityBar())
    trainer.fit(model)
    assert trainer.num_sanity_val_batches == [4] * num_dl
    assert not sanity[0].leave
    assert sanity[0].total_values == [4] * num_dl
    assert sanity[0].n_values == list(range(5)) * num_dl
    assert sanity[0].descriptions == [f"Sanity Checking DataLoader {i}: " for i in range(num_dl)]

    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1, callbacks=RecordingBar())
    pbar = trainer.progress_bar_callback
    trainer.fit(model)
    n, m = trainer.num_training_batches, trainer.num_val_batches
    assert pbar.train_progress_bar.total == n and pbar.train_progress_bar.n == n
    assert pbar.train_progress_bar.leave
    assert pbar.val_progress_bar.total_values == m
    assert pbar.val_progress_bar.n_values == list(range(m[0] + 1)) * num_dl
    assert pbar.val_progress_bar.descriptions == [f"Validation DataLoader {i}: "
                                                  for i in range(num_dl)]
    assert not pbar.val_progress_bar.leave

    trainer.validate(model)
    assert pbar.val_progress_bar.total_values == m
    assert pbar.val_progress_bar.n_values == list(range(m[0] + 1)) * num_dl
    assert pbar.val_progress_bar.leave  # no training bar above it

    trainer.test(model)
    k = trainer.num_test_batches
    assert pbar.test_progress_bar.total_values == k and pbar.test_progress_bar.leave
    assert pbar.test_progress_bar.n_values == list(range(k[0] + 1)) * num_dl
    assert pbar.test_progress_bar.descriptions == [f"Testing DataLoader {i}: "
                                                   for i in range(num_dl)]

    trainer.predict(model)
    k = trainer.num_predict_batches
    assert pbar.predict_progress_bar.total_values == k
    assert pbar.predict_progress_bar.n_values == list(range(k[0] + 1)) * num_dl
    assert pbar.predict_progress_bar.descriptions == [f"Predicting DataLoader {i}: "
                                                      for i in range(num_dl)]


def test_tqdm_progress_bar_fast_dev_run(tmp_path):
    model = BoringModel()
    trainer = Trainer(default_root_dir=tmp_path, fast_dev_run=True, callbacks=RecordingBar())
    trainer.fit(model)
    pbar = trainer.progress_bar_callback
    assert pbar.val_progress_bar.n == 1 and pbar.val_progress_bar.total == 1
    assert pbar.train_progress_bar.total == 1 and pbar.train_progress_bar.n == 1
    trainer.test(model)
    assert pbar.test_progress_bar.total == 1 and pbar.test_progress_bar.n == 1


@pytest.mark.parametrize(("train_batches", "val_batches", "refresh_rate", "train_updates",
                          "val_updates"), [
    (2, 3, 1, [0, 1, 2], [0, 1, 2, 3]),
    (3, 1, 2, [0, 2, 3], [0, 1]),
    (5, 0, 3, [0, 3, 5], []),
])
def test_train_progress_bar_update_amount(tmp_path, train_batches, val_batches, refresh_rate,
                                          train_updates, val_updates):
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=1,
                      limit_train_batches=train_batches, limit_val_batches=val_batches,
                      num_sanity_val_steps=0, callbacks=RecordingBar(refresh_rate=refresh_rate))
    trainer.fit(BoringModel())
    pbar = trainer.progress_bar_callback
    assert pbar.train_progress_bar.n_values == train_updates
    if val_batches:
        assert pbar.val_progress_bar.n_values == val_updates


@pytest.mark.parametrize(("input_num", "expected"), [
    (1, "1"), (1.0, "1.000"), (0.1, "0.100"), (1e-3, "0.001"), (1e-5, "1e-5"), ("1.0", "1.000"),
    ("10000", "10000"), ("abc", "abc"),
])
def test_tqdm_format_num(input_num, expected):
    assert format_num(input_num) == expected


def test_get_progress_bar_metrics(tmp_path):
    class Logged(BoringModel):
        def training_step(self, batch, batch_idx):
            out = super().training_step(batch, batch_idx)
            self.log("shown", 1.5, prog_bar=True)
            self.log("hidden", 2.5)
            return out

    trainer = Trainer(default_root_dir=tmp_path, max_steps=2, limit_val_batches=0,
                      logger=CSVLogger(tmp_path), callbacks=RecordingBar())
    model = Logged()
    trainer.fit(model)
    metrics = trainer.progress_bar_callback.get_metrics(trainer, model)
    assert metrics["v_num"] == 0 and metrics["shown"] == 1.5 and "hidden" not in metrics
    assert "shown" in trainer.progress_bar_callback.train_progress_bar.postfix


def test_tqdm_progress_bar_can_be_pickled(tmp_path):
    bar = RecordingBar()
    trainer = Trainer(default_root_dir=tmp_path, max_steps=1, limit_val_batches=1,
                      callbacks=bar)
    trainer.fit(BoringModel())
    pickle.dumps(bar)


@pytest.mark.parametrize("leave", [True, False])
def test_tqdm_leave(leave, tmp_path):
    bars = []

    class Counting(RecordingBar):
        def init_train_tqdm(self):
            bar = super().init_train_tqdm()
            bars.append(bar)
            return bar

    trainer = Trainer(default_root_dir=tmp_path, max_epochs=3, limit_train_batches=2,
                      limit_val_batches=0, callbacks=Counting(leave=leave))
    trainer.fit(BoringModel())
    assert len(bars) == (4 if leave else 1)  # on_train_start, then one per epoch with leave


def test_tqdm_progress_bar_print(tmp_path, capsys):
    class Printing(BoringModel):
        def training_step(self, batch, batch_idx):
            self.trainer.progress_bar_callback.print("training_step", end="")
            return super().training_step(batch, batch_idx)

    trainer = Trainer(default_root_dir=tmp_path, max_steps=1, limit_val_batches=0,
                      callbacks=TQDMProgressBar(interactive=False))
    trainer.fit(Printing())
    assert "training_step" in capsys.readouterr().out


def test_tqdm_disabled_when_not_interactive_logs_epoch_lines(tmp_path, caplog):
    class Logged(BoringModel):
        def training_step(self, batch, batch_idx):
            self.log("loss_shown", 0.25, prog_bar=True)
            return super().training_step(batch, batch_idx)

    trainer = Trainer(default_root_dir=tmp_path, max_epochs=2, limit_train_batches=2,
                      limit_val_batches=0, callbacks=TQDMProgressBar(interactive=False))
    caplog.set_level("INFO", logger="fulmen")
    trainer.fit(Logged())
    out = caplog.text  # the per-epoch line is status: the `fulmen` logger, not stdout
    assert "Epoch 0: 2 steps, loss_shown=0.250" in out and "Epoch 1: 4 steps" in out


def test_tqdm_progress_bar_disabled_when_not_rank_zero():
    bar = RecordingBar()

    class NotZero:
        is_global_zero = False

    bar.setup(NotZero(), None, "fit")
    assert bar.is_disabled


# ---------------------------------------------------------------------- rich


def _rich(**kwargs):
    output = StringIO()
    bar = RichProgressBar(console_kwargs={"file": output, "force_terminal": True,
                                          "width": 200}, **kwargs)
    return bar, output


def test_rich_progress_bar_stages(tmp_path):
    class Logged(BoringModel):
        def training_step(self, batch, batch_idx):
            self.log("shown", 0.125, prog_bar=True)
            return super().training_step(batch, batch_idx)

    bar, output = _rich()
    trainer = Trainer(default_root_dir=tmp_path, max_epochs=2, limit_train_batches=3,
                      limit_val_batches=2, limit_test_batches=2, limit_predict_batches=2,
                      callbacks=bar)
    model = Logged()
    trainer.fit(model)
    text = output.getvalue()
    assert "Epoch 1" in text and "3/3" in text and "it/s" in text
    assert "shown: 0.125" in text
    trainer.validate(model)
    trainer.test(model)
    trainer.predict(model)
    text = output.getvalue()
    for description in ("Sanity Checking", "Validation", "Testing", "Predicting"):
        assert description in text


def test_rich_progress_bar_theme_and_refresh_rate(tmp_path):
    theme = RichProgressBarTheme(metrics_format=".1e", metrics_text_delimiter=" | ")
    bar, output = _rich(theme=theme)

    class Logged(BoringModel):
        def training_step(self, batch, batch_idx):
            self.log("a", 0.5, prog_bar=True)
            self.log("b", 2.0, prog_bar=True)
            return super().training_step(batch, batch_idx)

    Trainer(default_root_dir=tmp_path, max_steps=2, limit_val_batches=0,
            callbacks=bar).fit(Logged())
    assert "a: 5.0e-01 | b: 2.0e+00" in output.getvalue()

    bar, output = _rich(refresh_rate=0)
    assert bar.is_disabled
    Trainer(default_root_dir=tmp_path, max_steps=2, limit_val_batches=0,
            callbacks=bar).fit(BoringModel())
    assert output.getvalue() == ""


def test_rich_progress_bar_can_be_pickled(tmp_path):
    bar, _ = _rich()
    Trainer(default_root_dir=tmp_path, max_steps=1, limit_val_batches=1,
            callbacks=bar).fit(BoringModel())
    pickle.loads(pickle.dumps(bar))


def test_rich_progress_bar_infinite_loader(tmp_path):
    from boring import RandomIterableDataset

    class Endless(BoringModel):
        def train_dataloader(self):
            return DataLoader(RandomIterableDataset(32, 5))

    bar, output = _rich()
    Trainer(default_root_dir=tmp_path, max_epochs=1, limit_val_batches=0,
            callbacks=bar).fit(Endless())
    assert "5/--" in output.getvalue()


def test_tensor_metrics_are_shown_as_numbers(tmp_path):
    class Logged(BoringModel):
        def training_step(self, batch, batch_idx):
            self.log("t", torch.tensor(0.75), prog_bar=True)
            return super().training_step(batch, batch_idx)

    trainer = Trainer(default_root_dir=tmp_path, max_steps=1, limit_val_batches=0,
                      callbacks=RecordingBar())
    model = Logged()
    trainer.fit(model)
    assert trainer.progress_bar_callback.get_metrics(trainer, model)["t"] == 0.75
