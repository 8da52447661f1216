"""``Callback.unused_hooks``: a callback names the hooks it will not need in a run, after its
``setup``, and the Trainer stops calling them; the built-in progress bar and checkpoint callback
use it to drop their per-batch hooks when those would do nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen.callbacks import ModelCheckpoint, TQDMProgressBar
from fulmen.errors import ConfigurationError


class Recorder(fulmen.Callback):
    """Counts its batch hooks; ``unused`` is what it answers."""

    def __init__(self, unused: tuple[str, ...] = ()) -> None:
        self.unused = unused
        self.calls: Counter[str] = Counter()
        self.asked: list[str] = []

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self.calls["setup"] += 1

    def unused_hooks(self, trainer: Any, module: Any, stage: str) -> tuple[str, ...]:
        assert self.calls["setup"] == len(self.asked) + 1, "asked after setup"
        self.asked.append(stage)
        return self.unused

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any,
                             batch_idx: int) -> None:
        self.calls["on_train_batch_start"] += 1

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self.calls["on_train_batch_end"] += 1


class Probe(fulmen.Callback):
    """Records, when training starts, whether the Trainer will call ``on_train_batch_end``."""

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self.batch_end_called = trainer.hooks.has("on_train_batch_end")


def _fit(callbacks: list[fulmen.Callback], tmp_path: Any, **flags: Any) -> fulmen.Trainer:
    options: dict[str, Any] = dict(max_steps=4, logger=False,
                                   enable_checkpointing=False, enable_progress_bar=False,
                                   enable_model_summary=False, default_root_dir=tmp_path)
    trainer = fulmen.Trainer(callbacks=callbacks, **{**options, **flags})
    trainer.fit(BoringModel())
    return trainer


def test_named_hooks_are_not_called_and_others_are(tmp_path: Any) -> None:
    dropped, kept = Recorder(("on_train_batch_end",)), Recorder()
    _fit([dropped, kept], tmp_path)
    assert dropped.asked == ["fit"]
    assert dropped.calls["on_train_batch_end"] == 0
    assert dropped.calls["on_train_batch_start"] == 4
    assert kept.calls["on_train_batch_end"] == 4


def test_each_run_asks_again(tmp_path: Any) -> None:
    recorder = Recorder(("on_train_batch_end",))
    trainer = _fit([recorder], tmp_path)
    trainer.validate(BoringModel(), dataloaders=DataLoader(RandomDataset(32, 2)))
    assert recorder.asked == ["fit", "validate"]


def test_a_name_that_is_not_a_hook_is_refused(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError,
                       match=r"unused_hooks\(\) returned \['on_train_bach_end'\]"):
        _fit([Recorder(("on_train_bach_end",))], tmp_path)


@pytest.mark.parametrize("interactive", [False, True])
def test_the_progress_bar_drops_its_batch_hooks_only_when_it_draws_nothing(
        tmp_path: Any, interactive: bool) -> None:
    probe = Probe()
    _fit([TQDMProgressBar(interactive=interactive), probe], tmp_path, enable_progress_bar=True)
    assert probe.batch_end_called is interactive


def test_a_progress_bar_subclass_keeps_the_batch_hook_it_overrides(tmp_path: Any) -> None:
    class Counting(TQDMProgressBar):
        batches = 0

        def on_train_batch_end(self, *args: Any) -> None:
            super().on_train_batch_end(*args)
            self.batches += 1

    bar = Counting(interactive=False)
    _fit([bar], tmp_path, enable_progress_bar=True)
    assert bar.batches == 4


@pytest.mark.parametrize(("every_n", "called"), [(None, False), (2, True)])
def test_the_checkpoint_callback_drops_its_batch_hook_when_it_saves_per_epoch(
        tmp_path: Any, every_n: int | None, called: bool) -> None:
    probe = Probe()
    checkpoint = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=every_n)
    _fit([checkpoint, probe], tmp_path, enable_checkpointing=True)
    assert probe.batch_end_called is called
