"""The order in which the Trainer calls module and callback hooks."""

from __future__ import annotations

from typing import Any

import pytest
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.module import Hooks

CALLBACK_HOOKS = [n for n in vars(fulmen.Callback) if n.startswith("on_")] + ["setup", "teardown"]
MODULE_HOOKS = [n for n in vars(Hooks) if n.startswith("on_") or n in ("setup", "teardown")]


class Recorder(fulmen.Callback):
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls


class RecordingModule(TinyModule):
    def __init__(self, calls: list[str]) -> None:
        super().__init__()
        self.calls = calls

    def configure_optimizers(self) -> Any:
        self.calls.append("configure_optimizers")
        return super().configure_optimizers()

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        self.calls.append("training_step")
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.calls.append("validation_step")
        super().validation_step(batch, batch_idx)

    def test_step(self, batch: Any, batch_idx: int) -> None:
        self.calls.append("test_step")
        super().test_step(batch, batch_idx)

    def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
        self.calls.append("predict_step")
        return self(batch[0])


def _recorder(name: str, prefix: str) -> Any:
    def hook(self: Any, *args: Any) -> None:
        self.calls.append(f"{prefix}{name}")
    return hook


for _name in CALLBACK_HOOKS:
    setattr(Recorder, _name, _recorder(_name, "cb."))
for _name in MODULE_HOOKS:
    if _name != "on_train_batch_start":
        setattr(RecordingModule, _name, _recorder(_name, ""))


def _train_batch_start(self: Any, batch: Any, batch_idx: int) -> None:
    self.calls.append("on_train_batch_start")


RecordingModule.on_train_batch_start = _train_batch_start  # type: ignore[method-assign]


def run(stage: str, **flags: Any) -> list[str]:
    calls: list[str] = []
    model = RecordingModule(calls)
    trainer = fulmen.Trainer(callbacks=[Recorder(calls)], **lean(**flags))
    data = loader(n=16, batch_size=8)
    if stage == "fit":
        trainer.fit(model, data, loader(n=8, batch_size=8))
    elif stage == "predict":
        trainer.predict(model, data)
    else:
        getattr(trainer, stage)(model, loader(n=8, batch_size=8), verbose=False)
    return calls


def both(hook: str) -> list[str]:
    return [f"cb.{hook}", hook]


def test_fit_hook_order():
    batch = [*both("on_train_batch_start"), "training_step", *both("on_before_zero_grad"),
             *both("on_before_backward"), *both("on_after_backward"),
             *both("on_before_optimizer_step"), *both("on_train_batch_end")]
    validation = [*both("on_validation_start"), *both("on_validation_epoch_start"),
                  *both("on_validation_batch_start"), "validation_step",
                  *both("on_validation_batch_end"), *both("on_validation_epoch_end"),
                  *both("on_validation_end")]
    expected = [
        "cb.setup", "setup", "configure_optimizers", *both("on_fit_start"),
        "cb.on_sanity_check_start", *validation, "cb.on_sanity_check_end",
        *both("on_train_start"), *both("on_train_epoch_start"), *batch, *batch,
        *validation, *both("on_train_epoch_end"), *both("on_train_end"), *both("on_fit_end"),
        "cb.teardown", "teardown",
    ]
    assert run("fit", max_epochs=1, num_sanity_val_steps=1) == expected


@pytest.mark.parametrize(("stage", "prefix", "step"), [
    ("validate", "validation", "validation_step"), ("test", "test", "test_step")])
def test_evaluation_hook_order(stage, prefix, step):
    expected = ["cb.setup", "setup", *both(f"on_{prefix}_start"),
                *both(f"on_{prefix}_epoch_start"), *both(f"on_{prefix}_batch_start"), step,
                *both(f"on_{prefix}_batch_end"), *both(f"on_{prefix}_epoch_end"),
                *both(f"on_{prefix}_end"), "cb.teardown", "teardown"]
    assert run(stage) == expected


def test_predict_hook_order():
    batch = [*both("on_predict_batch_start"), "predict_step", *both("on_predict_batch_end")]
    expected = ["cb.setup", "setup", *both("on_predict_start"), *both("on_predict_epoch_start"),
                *batch, *batch, *both("on_predict_epoch_end"), *both("on_predict_end"),
                "cb.teardown", "teardown"]
    assert run("predict") == expected


def test_save_and_load_checkpoint_hooks_are_called(tmp_path):
    calls: list[str] = []
    model = RecordingModule(calls)
    trainer = fulmen.Trainer(callbacks=[Recorder(calls)], **lean(max_epochs=1))
    trainer.fit(model, loader(n=8))
    calls.clear()
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    assert calls == ["cb.on_save_checkpoint", "on_save_checkpoint"]
    calls.clear()
    fulmen.Trainer(callbacks=[Recorder(calls)], **lean(max_epochs=2)).fit(
        model, loader(n=8), ckpt_path=tmp_path / "a.ckpt")
    assert calls.index("on_load_checkpoint") < calls.index("cb.on_load_checkpoint") < \
        calls.index("on_fit_start")


def test_train_batch_start_returning_minus_one_ends_the_epoch():
    class Skipper(TinyModule):
        def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
            return -1 if batch_idx == 1 else None

    trainer = fulmen.Trainer(**lean(max_epochs=2))
    trainer.fit(Skipper(), loader(n=32, batch_size=8))
    assert trainer.global_step == 2  # one batch in each of two epochs
