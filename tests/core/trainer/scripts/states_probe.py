"""Records ``trainer.state`` and the stage flags in every hook of fit (sanity check, validation
mid-epoch and at the epoch end), validate, test, predict and a fit whose training step raises;
prints them as JSON after ``STATES``. Written against Lightning's names: run it with the real
Lightning (``python states_probe.py``) and through ``fulmen run``; the two must print the same.
"""

from __future__ import annotations

import json
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.trainer.states import RunningStage, TrainerFn, TrainerState, TrainerStatus
from torch.utils.data import DataLoader

RECORDS: list[list[Any]] = []


def snap(where: str, trainer: Any) -> None:
    state = trainer.state
    RECORDS.append([where, None if state.fn is None else state.fn.value,
                    None if state.stage is None else state.stage.value, state.status.value,
                    trainer.training, trainer.validating, trainer.testing, trainer.predicting,
                    trainer.sanity_checking, trainer.evaluating, trainer.interrupted,
                    state.finished, state.stopped])


HOOKS = ["setup", "teardown", "on_fit_start", "on_fit_end", "on_sanity_check_start",
         "on_sanity_check_end", "on_train_start", "on_train_end", "on_train_epoch_start",
         "on_train_epoch_end", "on_validation_start", "on_validation_end",
         "on_validation_epoch_start", "on_validation_epoch_end", "on_test_start", "on_test_end",
         "on_predict_start", "on_predict_end", "on_exception", "on_train_batch_start",
         "on_validation_batch_start", "on_test_batch_start", "on_predict_batch_start"]


class Recorder(pl.Callback):
    pass


def _hook(name: str) -> Any:
    def hook(self: Any, trainer: Any, *args: Any, **kwargs: Any) -> None:
        snap(f"callback.{name}", trainer)
    return hook


for _name in HOOKS:
    setattr(Recorder, _name, _hook(_name))


class Model(BoringModel):
    def train_dataloader(self) -> Any:
        snap("train_dataloader", self.trainer)
        return DataLoader(RandomDataset(32, 8), batch_size=2)

    def val_dataloader(self) -> Any:
        snap("val_dataloader", self.trainer)
        return DataLoader(RandomDataset(32, 4), batch_size=2)

    def test_dataloader(self) -> Any:
        snap("test_dataloader", self.trainer)
        return DataLoader(RandomDataset(32, 4), batch_size=2)

    def predict_dataloader(self) -> Any:
        snap("predict_dataloader", self.trainer)
        return DataLoader(RandomDataset(32, 4), batch_size=2)

    def configure_optimizers(self) -> Any:
        snap("configure_optimizers", self.trainer)
        return super().configure_optimizers()

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if batch_idx == 0:
            snap("training_step", self.trainer)
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        snap("validation_step", self.trainer)
        return super().validation_step(batch, batch_idx)


class Failing(Model):
    def training_step(self, batch: Any, batch_idx: int) -> Any:
        raise RuntimeError("boom")


def trainer(**flags: Any) -> Any:
    return pl.Trainer(max_epochs=1, limit_train_batches=4, limit_val_batches=1, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, callbacks=[Recorder()], **flags)


def main() -> None:
    fitting = trainer(val_check_interval=2, num_sanity_val_steps=1)
    assert fitting.state == TrainerState(status=TrainerStatus.INITIALIZING, fn=None, stage=None)
    snap("created", fitting)
    model = Model()
    fitting.fit(model)
    snap("after fit", fitting)
    assert fitting.state.fn == TrainerFn.FITTING and fitting.state.stage is None
    fitting.validate(model, verbose=False)
    snap("after validate", fitting)
    fitting.test(model, verbose=False)
    snap("after test", fitting)
    fitting.predict(model)
    snap("after predict", fitting)
    # no sanity check: the validation data is requested before on_train_start
    trainer(num_sanity_val_steps=0).fit(Model())
    failing = trainer()
    try:
        failing.fit(Failing())
    except RuntimeError:
        pass
    snap("after failed fit", failing)
    assert RunningStage.SANITY_CHECKING.dataloader_prefix == "val"
    print("STATES" + json.dumps(RECORDS), flush=True)


if __name__ == "__main__":
    main()
