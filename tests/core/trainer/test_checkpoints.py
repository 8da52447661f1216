"""Checkpoint contents, safe loading, clear errors, and bit-exact resume."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import NoisyDataset, TinyModule, lean, loader
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import ModelCheckpoint


class Scheduled(TinyModule):
    """Dropout, Adam and a step-interval scheduler: every piece of state a resume must restore."""

    def __init__(self) -> None:
        super().__init__(dropout=0.3, optimizer="adam", lr=0.05)

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.7)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def shuffled() -> DataLoader:
    return DataLoader(NoisyDataset(40), batch_size=8, shuffle=True)  # 5 batches per epoch


def train(max_epochs: int, root: Path, callbacks: list[Any] | None = None,
          ckpt_path: Any = None, seed: int = 3, kind: type[TinyModule] | None = None,
          **flags: Any) -> tuple[fulmen.Trainer, TinyModule]:
    fulmen.seed_everything(seed)
    model = (kind or Scheduled)()
    trainer = fulmen.Trainer(**lean(max_epochs=max_epochs, default_root_dir=root,
                                    enable_checkpointing=bool(callbacks),
                                    callbacks=callbacks, **flags))
    trainer.fit(model, shuffled(), ckpt_path=ckpt_path)
    return trainer, model


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                 b.state_dict().values()))


def test_checkpoint_contents(tmp_path):
    trainer, _ = train(2, tmp_path)
    trainer.save_checkpoint(tmp_path / "full.ckpt")
    checkpoint = torch.load(tmp_path / "full.ckpt", weights_only=True)
    assert {"fulmen_version", "epoch", "global_step", "state_dict", "hyper_parameters", "loops",
            "optimizer_states", "lr_schedulers", "precision", "rng_states",
            "callbacks"} <= set(checkpoint)
    assert checkpoint["global_step"] == 10 and checkpoint["fulmen_version"] == fulmen.__version__
    assert checkpoint["hyper_parameters"]["dropout"] == 0.3
    assert set(checkpoint["rng_states"]) >= {"torch", "numpy", "python"}
    assert checkpoint["loops"]["fit"]["epoch_done"] is True
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file
    trainer.save_checkpoint(tmp_path / "weights.ckpt", weights_only=True)
    small = torch.load(tmp_path / "weights.ckpt", weights_only=True)
    assert "optimizer_states" not in small and "state_dict" in small


def test_resume_at_an_epoch_end_is_bit_exact(tmp_path):
    _, reference = train(4, tmp_path / "a")
    callback = ModelCheckpoint(dirpath=tmp_path / "ck", save_top_k=-1)
    train(2, tmp_path / "b", callbacks=[callback])
    ckpt = tmp_path / "ck" / "epoch=1-step=10.ckpt"
    trainer, resumed = train(4, tmp_path / "c", ckpt_path=ckpt, seed=99)  # another seed: the
    assert trainer.global_step == 20                                      # checkpoint decides
    assert same_weights(reference, resumed)


def test_resume_in_the_middle_of_an_epoch_is_bit_exact(tmp_path):
    _, reference = train(3, tmp_path / "a")
    callback = ModelCheckpoint(dirpath=tmp_path / "ck", every_n_train_steps=7, save_top_k=-1)
    train(2, tmp_path / "b", callbacks=[callback])
    ckpt = tmp_path / "ck" / "epoch=1-step=7.ckpt"  # batch 2 of the second epoch
    assert torch.load(ckpt, weights_only=True)["loops"]["fit"]["batches_done"] == 2
    trainer, resumed = train(3, tmp_path / "c", ckpt_path=ckpt, seed=99)
    assert trainer.global_step == 15
    assert same_weights(reference, resumed)


def test_save_checkpoint_after_fit_then_more_epochs_skips_none(tmp_path):
    """``trainer.save_checkpoint`` after fit, then ``fit(ckpt_path=...)`` with a larger
    max_epochs: the next epoch is the one after the last finished (progress counters)."""
    _, reference = train(4, tmp_path / "a")
    first, _ = train(2, tmp_path / "b")
    first.save_checkpoint(tmp_path / "after_fit.ckpt")
    progress = torch.load(tmp_path / "after_fit.ckpt", weights_only=True)["loops"]["fit"][
        "progress"]
    assert progress["epochs"] == {"started": 2, "completed": 2}
    assert progress["steps"] == {"started": 10, "completed": 10}
    trainer, resumed = train(4, tmp_path / "c", ckpt_path=tmp_path / "after_fit.ckpt", seed=99)
    assert (trainer.current_epoch, trainer.global_step) == (4, 20)
    assert same_weights(reference, resumed)


class Accumulated(TinyModule):
    """Dropout, SGD with momentum, an epoch-interval scheduler; run with accumulation."""

    def __init__(self) -> None:
        super().__init__(dropout=0.3, lr=0.05)

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)]


def test_mid_epoch_resume_with_accumulation_and_epoch_scheduler_is_bit_exact(tmp_path):
    flags = {"accumulate_grad_batches": 2}
    _, reference = train(3, tmp_path / "a", kind=Accumulated, **flags)
    callback = ModelCheckpoint(dirpath=tmp_path / "ck", every_n_train_steps=4, save_top_k=-1)
    train(2, tmp_path / "b", callbacks=[callback], kind=Accumulated, **flags)
    ckpt = tmp_path / "ck" / "epoch=1-step=4.ckpt"  # 3 steps per epoch: batch 2 of epoch 1
    fit_state = torch.load(ckpt, weights_only=True)["loops"]["fit"]
    assert fit_state["progress"]["epochs"] == {"started": 2, "completed": 1}
    assert fit_state["progress"]["batches"]["completed"] == 2
    trainer, resumed = train(3, tmp_path / "c", ckpt_path=ckpt, seed=99, kind=Accumulated,
                             **flags)
    assert trainer.global_step == 9
    assert trainer.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.05 / 8)
    assert same_weights(reference, resumed)


def test_resume_from_last_and_test_the_best(tmp_path):
    callback = ModelCheckpoint(dirpath=tmp_path, monitor="train_loss", save_last=True)
    train(2, tmp_path, callbacks=[callback])
    assert Path(callback.best_model_path).exists() and callback.last_model_path.endswith(
        "last.ckpt")
    again = fulmen.Trainer(**lean(max_epochs=3, enable_checkpointing=True, callbacks=[
        ModelCheckpoint(dirpath=tmp_path, monitor="train_loss", save_last=True)]))
    again.fit(Scheduled(), shuffled(), ckpt_path="last")  # found as dirpath/last.ckpt
    assert again.global_step == 15
    results = again.test(again.module, loader(), ckpt_path="best", verbose=False)
    assert "test_acc" in results[0]


def test_ckpt_path_errors(tmp_path):
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    with pytest.raises(ConfigurationError, match=r"checkpoint '.*missing.ckpt' does not exist"):
        trainer.fit(TinyModule(), loader(), ckpt_path=tmp_path / "missing.ckpt")
    (tmp_path / "junk.ckpt").write_text("not a checkpoint")
    with pytest.raises(ConfigurationError, match="is not a torch checkpoint"):
        trainer.fit(TinyModule(), loader(), ckpt_path=tmp_path / "junk.ckpt")
    torch.save({"weights": torch.ones(1)}, tmp_path / "other.pt")
    with pytest.raises(ConfigurationError, match=r"is not a fulmen checkpoint: it has no "
                       r"'state_dict' \(found \['weights'\]\)"):
        trainer.fit(TinyModule(), loader(), ckpt_path=tmp_path / "other.pt")
    with pytest.raises(ConfigurationError, match=r"`.fit\(ckpt_path=\"best\"\)` is set but "
                       r"`ModelCheckpoint` is not configured. Pass a checkpoint file"):
        trainer.fit(TinyModule(), loader(), ckpt_path="best")


def test_a_checkpoint_from_another_model_lists_the_keys(tmp_path):
    trainer, _ = train(1, tmp_path)
    trainer.save_checkpoint(tmp_path / "a.ckpt")

    class Other(TinyModule):
        def __init__(self) -> None:
            super().__init__()
            self.extra = torch.nn.Linear(2, 2)

    with pytest.raises(ConfigurationError, match=r"does not fit Other: missing keys "
                       r"\['extra.bias', 'extra.weight'\], unexpected keys \[\]"):
        fulmen.Trainer(**lean()).validate(Other(), loader(), ckpt_path=tmp_path / "a.ckpt")


@pytest.mark.parametrize(("version", "why"), [
    ("99.0.0", r"written by fulmen 99\.0\.0, whose loop state this fulmen \(.*\) cannot read"),
    ("0.0.1", r"written by fulmen 0\.0\.1, whose loop state"),
    ("banana", r"its fulmen_version='banana' is not a version"),
])
def test_a_checkpoint_from_an_incompatible_fulmen_is_refused_before_loading(tmp_path, version,
                                                                           why):
    trainer, _ = train(1, tmp_path)
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    checkpoint = torch.load(tmp_path / "a.ckpt", weights_only=True)
    checkpoint["fulmen_version"] = version
    torch.save(checkpoint, tmp_path / "other_version.ckpt")
    model = Scheduled()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ConfigurationError, match=why) as info:
        fulmen.Trainer(**lean(max_epochs=2)).fit(model, shuffled(),
                                                 ckpt_path=tmp_path / "other_version.ckpt")
    assert "resumes checkpoints written by fulmen 0.1.0 to " in str(info.value)
    assert "load_from_checkpoint" in str(info.value)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # untouched
    results = fulmen.Trainer(**lean()).test(model, loader(), verbose=False,  # weights: any
                                            ckpt_path=tmp_path / "other_version.ckpt")
    assert "test_acc" in results[0]


class Opaque:
    pass


def test_unsafe_checkpoints_are_refused_with_the_way_to_opt_in(tmp_path):
    torch.save({"state_dict": {}, "hyper_parameters": {"thing": Opaque()}},
               tmp_path / "unsafe.ckpt")
    with pytest.raises(ConfigurationError, match=r"holds Python objects that safe loading "
                       r"refuses .* If you trust the file, load it with weights_only=False"):
        TinyModule.load_from_checkpoint(tmp_path / "unsafe.ckpt")


def test_load_from_checkpoint_rebuilds_from_hyperparameters(tmp_path):
    model = TinyModule(hidden=12, lr=0.2)
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(model, loader())
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    loaded = TinyModule.load_from_checkpoint(tmp_path / "a.ckpt")
    assert loaded.hparams.hidden == 12 and same_weights(model, loaded)
    assert TinyModule.load_from_checkpoint(tmp_path / "a.ckpt", lr=0.5).hparams.lr == 0.5
    with pytest.raises(ConfigurationError, match="fulmen checkpoint"):
        fulmen.Trainer(**lean()).fit(TinyModule(hidden=12), loader(),
                                     ckpt_path=_lightning_like(tmp_path, model))


def _lightning_like(tmp_path: Path, model: torch.nn.Module) -> Path:
    path = tmp_path / "lightning.ckpt"
    torch.save({"pytorch-lightning_version": "1.9.0", "state_dict": model.state_dict(),
                "epoch": 3, "global_step": 10}, path)
    return path


def test_lightning_format_weights_load(tmp_path):
    model = TinyModule()
    path = _lightning_like(tmp_path, model)
    loaded = TinyModule.load_from_checkpoint(path)
    assert same_weights(model, loaded)
    results = fulmen.Trainer(**lean()).validate(TinyModule(), loader(), ckpt_path=path,
                                                verbose=False)
    assert "val_acc" in results[0]


def test_an_exception_in_user_code_keeps_the_last_good_checkpoint(tmp_path):
    class Crashes(Scheduled):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            if self.current_epoch == 2 and batch_idx == 3:
                raise KeyError("user bug")
            return super().training_step(batch, batch_idx)

    callback = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    trainer = fulmen.Trainer(**lean(max_epochs=5, enable_checkpointing=True,
                                    callbacks=[callback]))
    with pytest.raises(KeyError, match="user bug") as info:
        trainer.fit(Crashes(), shuffled())
    assert info.type is KeyError  # re-raised unchanged
    last = torch.load(tmp_path / "last.ckpt", weights_only=True)
    assert (last["epoch"], last["global_step"]) == (1, 10)
    assert sorted(os.listdir(tmp_path)) == ["epoch=1-step=10.ckpt", "last.ckpt"]
