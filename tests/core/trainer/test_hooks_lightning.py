"""Port of Lightning's ``tests_pytorch/models/test_hooks.py``: the full recorded call sequence of
a model and a callback that override every hook, for fit (automatic and manual optimization),
validate, test and predict.

Deliberate differences from Lightning (also in docs/migrating.md):

- The recording model and callback are subclasses with every hook overridden (Lightning
  patches instance attributes; fulmen calls those too, see
  ``test_hooks_assigned_to_the_instance_are_called``).
- The records hold hook names (plus the arguments of the optimization hooks); torch methods
  (``forward``, ``train``, ``zero_grad``) and the ``*_dataloader`` calls are not recorded here:
  when fit requests its dataloaders (the validation ones inside the sanity check, then the
  training one) is checked in ``test_dataloaders_reload_lightning.py``.
- ``dataloader_idx`` is passed to batch hooks only with several dataloaders (as Lightning).
- On a resume, ``configure_optimizers`` runs before ``on_load_checkpoint`` (Lightning calls it
  after): the checkpoint is read once, after the optimizers exist, so sharded strategies can
  load their optimizer state from the same read. ``Callback.state_dict``/``load_state_dict``
  are not recorded.
- ModelCheckpoint is turned off, so no checkpoint hooks run at the end of the epoch; the
  checkpoint hooks are covered by the resume tests.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.trainer.hooks import CALLBACK_ONLY, HOOK_NAMES, MODULE_ONLY

CALLBACK_HOOKS = HOOK_NAMES + CALLBACK_ONLY
MODEL_HOOKS = [h for h in HOOK_NAMES + MODULE_ONLY if h != "prepare_data"] + [
    "prepare_data", "configure_optimizers", "configure_callbacks", "clip_gradients",
    "manual_backward", "training_step", "validation_step", "test_step", "predict_step"]


class _Any:
    def __eq__(self, other: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()


def _record(cls: type, name: str, prefix: str, with_args: bool) -> Any:
    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = getattr(super(cls, self), name)(*args, **kwargs)
        entry: dict[str, Any] = {"name": prefix + name}
        if with_args and args:
            entry["args"] = args
        if with_args and kwargs:
            entry["kwargs"] = kwargs
        self.called.append(entry)
        return out

    functools.update_wrapper(hook, getattr(fulmen.Module if not prefix else fulmen.Callback,
                                           name))
    return hook


WITH_ARGS = {"optimizer_step", "optimizer_zero_grad", "lr_scheduler_step", "clip_gradients",
             "configure_gradient_clipping", "on_train_batch_start", "on_validation_batch_start",
             "setup", "teardown", "backward"}


class Boring(fulmen.Module):
    def __init__(self, called: list[dict[str, Any]]) -> None:
        super().__init__()
        self.called = called
        self.layer = torch.nn.Linear(32, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        return {"loss": self(batch[0]).sum()}

    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        return {"x": self(batch[0]).sum()}

    def test_step(self, batch: Any, batch_idx: int) -> Any:
        return {"y": self(batch[0]).sum()}

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)]


class HookedModel(Boring):
    pass


class HookedCallback(fulmen.Callback):
    def __init__(self, called: list[dict[str, Any]]) -> None:
        self.called = called


for _name in MODEL_HOOKS:
    setattr(HookedModel, _name, _record(HookedModel, _name, "", _name in WITH_ARGS))
for _name in CALLBACK_HOOKS:
    setattr(HookedCallback, _name, _record(HookedCallback, _name, "Callback.", False))


def _data(n: int = 64) -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(n, 32)), batch_size=2)


def _batch_transfer() -> list[dict[str, Any]]:
    return [{"name": "on_before_batch_transfer"}, {"name": "transfer_batch_to_device"},
            {"name": "on_after_batch_transfer"}]


def _auto_train_batch(batches: int, epoch: int = 0, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, batches):
        out += [
            *_batch_transfer(),
            {"name": "Callback.on_train_batch_start"},
            {"name": "on_train_batch_start", "args": (ANY, i)},
            {"name": "training_step"},
            {"name": "Callback.on_before_zero_grad"},
            {"name": "on_before_zero_grad"},
            {"name": "optimizer_zero_grad", "args": (epoch, i, ANY)},
            {"name": "Callback.on_before_backward"},
            {"name": "on_before_backward"},
            {"name": "backward", "args": (ANY,)},
            {"name": "Callback.on_after_backward"},
            {"name": "on_after_backward"},
            {"name": "Callback.on_before_optimizer_step"},
            {"name": "on_before_optimizer_step"},
            {"name": "clip_gradients", "args": (ANY,),
             "kwargs": {"gradient_clip_val": None, "gradient_clip_algorithm": None}},
            {"name": "configure_gradient_clipping", "args": (ANY,),
             "kwargs": {"gradient_clip_val": None, "gradient_clip_algorithm": None}},
            {"name": "optimizer_step", "args": (epoch, i, ANY, ANY)},
            *([{"name": "lr_scheduler_step", "args": (ANY, None)}] if i == batches - 1 else []),
            {"name": "Callback.on_train_batch_end"},
            {"name": "on_train_batch_end"},
        ]
    return out


def _manual_train_batch(batches: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(batches):
        out += [
            *_batch_transfer(),
            {"name": "Callback.on_train_batch_start"},
            {"name": "on_train_batch_start", "args": (ANY, i)},
            {"name": "Callback.on_before_backward"},
            {"name": "on_before_backward"},
            {"name": "backward", "args": (ANY,)},
            {"name": "Callback.on_after_backward"},
            {"name": "on_after_backward"},
            {"name": "manual_backward"},
            {"name": "closure"},
            {"name": "Callback.on_before_optimizer_step"},
            {"name": "on_before_optimizer_step"},
            {"name": "training_step"},
            {"name": "Callback.on_train_batch_end"},
            {"name": "on_train_batch_end"},
        ]
    return out


def _eval_epoch(fn: str, batches: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"name": f"Callback.on_{fn}_epoch_start"},
                                 {"name": f"on_{fn}_epoch_start"}]
    for i in range(batches):
        out += [*_batch_transfer(), {"name": f"Callback.on_{fn}_batch_start"}]
        out += [{"name": f"on_{fn}_batch_start", "args": (ANY, i)}] if fn == "validation" \
            else [{"name": f"on_{fn}_batch_start"}]
        out += [{"name": f"{fn}_step"}, {"name": f"Callback.on_{fn}_batch_end"},
                {"name": f"on_{fn}_batch_end"}]
    return [*out, {"name": f"Callback.on_{fn}_epoch_end"}, {"name": f"on_{fn}_epoch_end"}]


def _trainer(callback: fulmen.Callback, **flags: Any) -> fulmen.Trainer:
    return fulmen.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                          enable_model_summary=False, enable_checkpointing=False,
                          callbacks=[callback], **flags)


def _start(stage: str) -> list[dict[str, Any]]:
    return [{"name": "configure_callbacks"}, {"name": "prepare_data"},
            {"name": "Callback.setup"}, {"name": "setup", "args": (stage,)},
            {"name": "configure_model"}]


def _end(stage: str) -> list[dict[str, Any]]:
    return [{"name": "Callback.teardown"}, {"name": "teardown", "args": (stage,)}]


@pytest.mark.parametrize("automatic_optimization", [True, False])
@pytest.mark.parametrize("override_on_validation_model_train", [True, False])
def test_trainer_model_hook_system_fit(override_on_validation_model_train: bool,
                                       automatic_optimization: bool) -> None:
    called: list[dict[str, Any]] = []

    class TestModel(HookedModel):
        def __init__(self) -> None:
            super().__init__(called)
            self.automatic_optimization = automatic_optimization

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            if self.automatic_optimization:
                return super().training_step(batch, batch_idx)
            loss = self(batch[0]).sum()
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step(lambda: called.append({"name": "closure"}))
            self.called.append({"name": "training_step"})
            return {"loss": loss}

    if not override_on_validation_model_train:
        TestModel.on_validation_model_train = fulmen.Module.on_validation_model_train  # type: ignore[method-assign]
    model = TestModel()
    trainer = _trainer(HookedCallback(called), max_epochs=1, limit_train_batches=2,
                       limit_val_batches=2)
    trainer.fit(model, _data(), _data())
    model_train = [{"name": "on_validation_model_train"}] if override_on_validation_model_train \
        else []
    validation = [{"name": "on_validation_model_eval"},
                  {"name": "Callback.on_validation_start"}, {"name": "on_validation_start"},
                  *_eval_epoch("validation", 2),
                  {"name": "Callback.on_validation_end"}, {"name": "on_validation_end"},
                  *model_train]
    train_batches = _auto_train_batch(2) if automatic_optimization else _manual_train_batch(2)
    expected = [
        *_start("fit"),
        {"name": "configure_optimizers"},
        {"name": "Callback.on_fit_start"}, {"name": "on_fit_start"},
        {"name": "Callback.on_sanity_check_start"},
        *validation,
        {"name": "Callback.on_sanity_check_end"},
        {"name": "Callback.on_train_start"}, {"name": "on_train_start"},
        {"name": "Callback.on_train_epoch_start"}, {"name": "on_train_epoch_start"},
        *train_batches,
        {"name": "on_validation_model_zero_grad"},
        *validation,
        {"name": "Callback.on_train_epoch_end"}, {"name": "on_train_epoch_end"},
        {"name": "Callback.on_train_end"}, {"name": "on_train_end"},
        {"name": "Callback.on_fit_end"}, {"name": "on_fit_end"},
        *_end("fit"),
    ]
    assert called == expected


def test_trainer_model_hook_system_fit_no_val_and_resume_max_epochs(tmp_path: Any) -> None:
    """Train 1 epoch, save, resume with max_epochs=2: exactly one more epoch runs (epoch 1)."""
    called: list[dict[str, Any]] = []
    model = HookedModel(called)
    trainer = _trainer(HookedCallback(called), max_epochs=1, limit_train_batches=2,
                       limit_val_batches=0)
    trainer.fit(model, _data())
    path = tmp_path / "last.ckpt"
    trainer.save_checkpoint(path)
    called.clear()
    trainer = _trainer(HookedCallback(called), max_epochs=2, limit_train_batches=2,
                       limit_val_batches=0)
    trainer.fit(model, _data(), ckpt_path=path)
    assert trainer.current_epoch == 2 and trainer.global_step == 4
    expected = [
        *_start("fit"),
        {"name": "configure_optimizers"},
        {"name": "on_load_checkpoint"},
        {"name": "Callback.on_load_checkpoint"},
        {"name": "Callback.on_fit_start"}, {"name": "on_fit_start"},
        {"name": "Callback.on_train_start"}, {"name": "on_train_start"},
        {"name": "Callback.on_train_epoch_start"}, {"name": "on_train_epoch_start"},
        *_auto_train_batch(2, epoch=1),
        {"name": "Callback.on_train_epoch_end"}, {"name": "on_train_epoch_end"},
        {"name": "Callback.on_train_end"}, {"name": "on_train_end"},
        {"name": "Callback.on_fit_end"}, {"name": "on_fit_end"},
        *_end("fit"),
    ]
    assert called == expected


@pytest.mark.parametrize("verb, noun, step", [("validate", "validation", "validation_step"),
                                              ("test", "test", "test_step")])
def test_trainer_model_hook_system_eval(verb: str, noun: str, step: str) -> None:
    called: list[dict[str, Any]] = []
    model = HookedModel(called)
    trainer = _trainer(HookedCallback(called), limit_val_batches=1, limit_test_batches=1)
    getattr(trainer, verb)(model, _data(), verbose=False)
    model_train = [{"name": f"on_{noun}_model_train"}]
    expected = [
        *_start(verb),
        {"name": f"on_{noun}_model_eval"},
        {"name": f"Callback.on_{noun}_start"}, {"name": f"on_{noun}_start"},
        *_eval_epoch(noun, 1),
        {"name": f"Callback.on_{noun}_end"}, {"name": f"on_{noun}_end"},
        *model_train,
        *_end(verb),
    ]
    assert called == expected


def test_trainer_model_hook_system_predict() -> None:
    called: list[dict[str, Any]] = []
    model = HookedModel(called)
    trainer = _trainer(HookedCallback(called), limit_predict_batches=2)
    trainer.predict(model, _data())
    batches: list[dict[str, Any]] = []
    for _ in range(2):
        batches += [*_batch_transfer(), {"name": "Callback.on_predict_batch_start"},
                    {"name": "on_predict_batch_start"}, {"name": "predict_step"},
                    {"name": "Callback.on_predict_batch_end"}, {"name": "on_predict_batch_end"}]
    expected = [
        *_start("predict"),
        {"name": "on_predict_model_eval"},
        {"name": "Callback.on_predict_start"}, {"name": "on_predict_start"},
        {"name": "Callback.on_predict_epoch_start"}, {"name": "on_predict_epoch_start"},
        *batches,
        {"name": "Callback.on_predict_epoch_end"}, {"name": "on_predict_epoch_end"},
        {"name": "Callback.on_predict_end"}, {"name": "on_predict_end"},
        *_end("predict"),
    ]
    assert called == expected


def test_wrong_hook_signature_is_named() -> None:
    class Bad(Boring):
        def optimizer_step(self, optimizer: Any) -> None:  # type: ignore[override]
            optimizer.step()

    with pytest.raises(fulmen.ConfigurationError,
                       match=r"Bad.optimizer_step\(self, optimizer.*the hook's signature is "
                             r"optimizer_step\(self, epoch, batch_idx, optimizer, "
                             r"optimizer_closure=None\)"):
        _trainer(fulmen.Callback(), max_epochs=1).fit(Bad([]), _data())


def test_hooks_assigned_to_the_instance_are_called(tmp_path: Any) -> None:
    """Lightning calls a hook assigned to the module instance (its test_hooks.py patches them
    so): module hooks, module-only hooks (batch transfer) and steps."""
    calls: list[str] = []
    from fulmen.demos import BoringModel

    model = BoringModel()
    model.on_train_epoch_start = lambda: calls.append("on_train_epoch_start")
    model.on_train_batch_end = lambda *args: calls.append("on_train_batch_end")
    model.on_before_batch_transfer = lambda batch, idx: (calls.append("transfer"), batch)[1]
    model.on_validation_epoch_end = lambda: calls.append("on_validation_epoch_end")
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                             limit_val_batches=1, num_sanity_val_steps=0, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
    trainer.fit(model)
    assert calls == ["on_train_epoch_start", "transfer", "on_train_batch_end", "transfer",
                     "on_train_batch_end", "transfer", "on_validation_epoch_end"]
