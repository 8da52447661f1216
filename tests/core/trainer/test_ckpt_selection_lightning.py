"""Ports of Lightning's tests of which checkpoint ``validate``/``test``/``predict`` load
(``tests_pytorch/trainer/test_trainer.py``: ``test_checkpoint_path_input``,
``test_tested_checkpoint_path_best``, ``test_best_ckpt_evaluate_raises_warning_with_multiple_
ckpt_callbacks``), plus the numbers a script sees: after ``fit``, ``trainer.test(dataloaders=...)``
without a model tests the best checkpoint, not the last weights.

Deliberate differences (also in docs/migrating.md):

- The errors for ``ckpt_path="best"`` without a usable ModelCheckpoint are
  ``fulmen.ConfigurationError`` (a ``ValueError``, as Lightning raises), with Lightning's message
  and a hint to pass a model or a file.
- ``ModelCheckpoint(monitor=..., save_top_k=0)`` is refused by fulmen (the monitor would be
  ignored), so the ``save_top_k=0`` cases use no monitor.
- A checkpoint path that does not exist is a ``ConfigurationError`` naming it (Lightning:
  ``FileNotFoundError``), raised before anything is loaded.
- The multiple-callbacks warning is checked through a real ``test()`` call (Lightning calls the
  private ``_parse_ckpt_path``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen.callbacks import ModelCheckpoint


class CheckedModel(BoringModel):
    def validation_step(self, batch, batch_idx):
        self.log("foo", -batch_idx)
        return super().validation_step(batch, batch_idx)

    def test_step(self, *args):
        return self.validation_step(*args)

    def predict_step(self, batch, *_):
        return self(batch)


def _trainer(tmp_path: Path, **flags) -> fulmen.Trainer:
    flags = {"max_epochs": 2, **flags}
    return fulmen.Trainer(limit_train_batches=4, limit_val_batches=1,
                          limit_test_batches=1, limit_predict_batches=1,
                          enable_progress_bar=False, enable_model_summary=False,
                          default_root_dir=tmp_path, **flags)


@pytest.mark.parametrize("ckpt_path", [None, "best", "specific"])
@pytest.mark.parametrize("save_top_k", [-1, 0, 1])
@pytest.mark.parametrize("fn", ["validate", "test", "predict"])
def test_checkpoint_path_input(tmp_path: Path, ckpt_path, save_top_k, fn) -> None:
    model = CheckedModel()
    monitor = {"monitor": "foo"} if save_top_k else {}  # fulmen refuses monitor + save_top_k=0
    trainer = _trainer(tmp_path, callbacks=[ModelCheckpoint(save_top_k=save_top_k, **monitor)])
    trainer.fit(model)
    trainer_fn = getattr(trainer, fn)
    assert trainer.ckpt_path is None

    if ckpt_path == "best":
        if save_top_k == 0:
            with pytest.raises(ValueError, match=r".*is not configured to save the best.*"):
                trainer_fn(ckpt_path=ckpt_path)
            with pytest.raises(ValueError, match=r".*is not configured to save the best.*"):
                trainer_fn(model, ckpt_path=ckpt_path)
        else:
            trainer_fn(ckpt_path=ckpt_path)
            assert trainer.ckpt_path == trainer.checkpoint_callback.best_model_path
            trainer_fn(model, ckpt_path=ckpt_path)
            assert trainer.ckpt_path == trainer.checkpoint_callback.best_model_path
    elif ckpt_path is None:
        trainer_fn(model, ckpt_path=ckpt_path)
        assert trainer.ckpt_path is None
        if save_top_k > 0:
            with pytest.warns(UserWarning,
                              match=r"The best model of the previous `fit` call will be used"):
                trainer_fn(ckpt_path=ckpt_path)
            assert trainer.ckpt_path == trainer.checkpoint_callback.best_model_path
        elif save_top_k == 0:  # Lightning: "best" is chosen, and there is none
            with pytest.warns(UserWarning, match="The best model"), \
                    pytest.raises(ValueError, match="not configured to save the best"):
                trainer_fn(ckpt_path=ckpt_path)
    else:
        if save_top_k == 0:
            with pytest.raises(fulmen.ConfigurationError, match="does not exist"):
                trainer_fn(ckpt_path="random.ckpt")
        else:
            path = str(next(Path(trainer.checkpoint_callback.dirpath).iterdir()).absolute())
            trainer_fn(ckpt_path=path)
            assert trainer.ckpt_path == path
            trainer_fn(model, ckpt_path=path)
            assert trainer.ckpt_path == path


@pytest.mark.parametrize("enable_checkpointing", [False, True])
@pytest.mark.parametrize("fn", ["validate", "test", "predict"])
def test_tested_checkpoint_path_best(tmp_path: Path, enable_checkpointing, fn) -> None:
    model = CheckedModel()
    trainer = _trainer(tmp_path, enable_checkpointing=enable_checkpointing)
    trainer.fit(model)
    trainer_fn = getattr(trainer, fn)
    assert trainer.ckpt_path is None
    if enable_checkpointing:
        trainer_fn(ckpt_path="best")
        assert trainer.ckpt_path == trainer.checkpoint_callback.best_model_path
        trainer_fn(model, ckpt_path="best")
        assert trainer.ckpt_path == trainer.checkpoint_callback.best_model_path
    else:
        with pytest.raises(ValueError, match=r"`ModelCheckpoint` is not configured\."):
            trainer_fn(ckpt_path="best")
        with pytest.raises(ValueError, match=r"`ModelCheckpoint` is not configured\."):
            trainer_fn(model, ckpt_path="best")


def test_best_ckpt_evaluate_raises_warning_with_multiple_ckpt_callbacks(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, max_epochs=1, callbacks=[
        ModelCheckpoint(monitor="foo", dirpath=tmp_path / "a"),
        ModelCheckpoint(monitor="foo", mode="max", dirpath=tmp_path / "b")])
    trainer.fit(CheckedModel())
    with pytest.warns(UserWarning, match="best checkpoint path from first checkpoint callback"):
        trainer.test()
    assert trainer.ckpt_path == trainer.checkpoint_callbacks[0].best_model_path


def test_test_after_fit_without_model_tests_the_best_weights(tmp_path: Path) -> None:
    """The script of the issue: the validation loss is worst at the end, so the best
    checkpoint is an earlier epoch's and the tested numbers are that checkpoint's."""

    class Diverging(BoringModel):
        def validation_step(self, batch, batch_idx):
            self.log("val_loss", float(self.current_epoch))  # epoch 0 is best
            return super().validation_step(batch, batch_idx)

        def test_step(self, batch, batch_idx):
            self.log("weight_sum", self.layer.weight.sum())

    trainer = _trainer(tmp_path, max_epochs=3, callbacks=[ModelCheckpoint(monitor="val_loss")])
    model = Diverging()
    trainer.fit(model)
    last = model.layer.weight.sum().item()
    data = DataLoader(RandomDataset(32, 4))
    with pytest.warns(UserWarning, match=r"The best model of the previous `fit` call"):
        best = trainer.test(dataloaders=data, verbose=False)[0]["weight_sum"]
    saved = torch.load(trainer.checkpoint_callback.best_model_path, weights_only=True)
    assert best == pytest.approx(saved["state_dict"]["layer.weight"].sum().item())
    assert best != pytest.approx(last)
    assert trainer.checkpoint_callback.best_model_path.endswith("epoch=0-step=4.ckpt")
