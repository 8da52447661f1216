"""Lightning's ``tests_pytorch/trainer/test_states.py``, ported to fulmen, with the state enums'
semantics (``lightning.pytorch.trainer.states``) and the stage flags Lightning's loops set
(``trainer.training``/``validating``/``sanity_checking`` inside fit, as in
``loops/fit_loop.py`` and ``loops/training_epoch_loop.py``); and one script written against
Lightning's names, run on the real Lightning and through ``fulmen run``, whose records of
``trainer.state`` in every hook must be the same.

Deliberate differences:
- ``test_interrupt_state_on_keyboard_interrupt``: Lightning catches ``KeyboardInterrupt``, tears
  down and calls ``sys.exit(1)``; fulmen tears down and lets the ``KeyboardInterrupt``
  propagate. The state afterwards is the same (``trainer.interrupted``).
- After a stage that raised, fulmen also calls the callbacks' and module's ``teardown`` hook
  (Lightning does not); the side-by-side comparison checks that call's state (interrupted)
  and otherwise leaves it out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from boring import BoringModel

import fulmen
from fulmen.callbacks import Callback
from fulmen.trainer.states import RunningStage, TrainerFn, TrainerState, TrainerStatus

SCRIPTS = Path(__file__).parent / "scripts"


def test_initialize_state():
    """Tests that state is INITIALIZING after Trainer creation."""
    trainer = fulmen.Trainer()
    assert trainer.state == TrainerState(status=TrainerStatus.INITIALIZING, fn=None, stage=None)


@pytest.mark.parametrize(
    "extra_params",
    [pytest.param({"fast_dev_run": True}, id="Fast-Run"), pytest.param({"max_steps": 1}, id="Single-Step")],
)
def test_trainer_fn_while_running(tmp_path, extra_params):
    class TestModel(BoringModel):
        def __init__(self, expected_fn, expected_stage):
            super().__init__()
            self.expected_fn = expected_fn
            self.expected_stage = expected_stage
            self.lr = 0.1

        def on_train_batch_start(self, *_):
            assert self.trainer.state.status == TrainerStatus.RUNNING
            assert self.trainer.state.fn == self.expected_fn
            assert self.trainer.training

        def on_sanity_check_start(self, *_):
            assert self.trainer.state.status == TrainerStatus.RUNNING
            assert self.trainer.state.fn == self.expected_fn
            assert self.trainer.sanity_checking

        def on_validation_batch_start(self, *_):
            assert self.trainer.state.status == TrainerStatus.RUNNING
            assert self.trainer.state.fn == self.expected_fn
            assert self.trainer.validating or self.trainer.sanity_checking

        def on_test_batch_start(self, *_):
            assert self.trainer.state.status == TrainerStatus.RUNNING
            assert self.trainer.state.fn == self.expected_fn
            assert self.trainer.testing

    trainer = fulmen.Trainer(default_root_dir=tmp_path, enable_progress_bar=False, **extra_params)

    model = TestModel(TrainerFn.FITTING, RunningStage.TRAINING)
    trainer.fit(model)
    assert trainer.state.finished

    model = TestModel(TrainerFn.VALIDATING, RunningStage.VALIDATING)
    trainer.validate(model)
    assert trainer.state.finished

    model = TestModel(TrainerFn.TESTING, RunningStage.TESTING)
    trainer.test(model)
    assert trainer.state.finished


@pytest.mark.parametrize(
    "extra_params",
    [pytest.param({"fast_dev_run": True}, id="Fast-Run"), pytest.param({"max_steps": 1}, id="Single-Step")],
)
def test_interrupt_state_on_keyboard_interrupt(tmp_path, extra_params):
    """Tests that state is set to INTERRUPTED on KeyboardInterrupt (Lightning exits with
    SystemExit; fulmen re-raises the KeyboardInterrupt)."""
    model = BoringModel()

    class InterruptCallback(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            raise KeyboardInterrupt

    trainer = fulmen.Trainer(callbacks=[InterruptCallback()], default_root_dir=tmp_path,
                             enable_progress_bar=False, **extra_params)

    with pytest.raises(KeyboardInterrupt):
        trainer.fit(model)
    assert trainer.interrupted
    assert trainer.state.stopped and not trainer.state.finished and trainer.state.stage is None


def test_a_failed_check_interrupts_too(tmp_path):
    """Lightning sets ``fn`` and ``running`` before checking the call, so a refused call leaves
    the Trainer interrupted in that function."""
    trainer = fulmen.Trainer(default_root_dir=tmp_path, enable_progress_bar=False)
    with pytest.raises(fulmen.ConfigurationError):
        trainer.test(BoringModel(), ckpt_path="best")  # no ModelCheckpoint
    assert trainer.state == TrainerState(TrainerStatus.INTERRUPTED, TrainerFn.TESTING, None)


def test_enums_compare_as_their_strings():
    """``LightningEnum``: a member equals its value, case-insensitively, and hashes like it."""
    assert TrainerFn.FITTING == "fit" and TrainerFn.FITTING == "FIT"
    assert TrainerFn.FITTING != "validate" and TrainerFn.FITTING != RunningStage.TRAINING
    assert RunningStage.VALIDATING == TrainerFn.VALIDATING  # both "validate"
    assert {"fit": 1}[TrainerFn.FITTING] == 1 and RunningStage.TRAINING in {"train"}
    assert TrainerFn("predict") is TrainerFn.PREDICTING
    assert TrainerStatus.from_str("finished", source="value") is TrainerStatus.FINISHED
    assert [s.value for s in TrainerStatus] == ["initializing", "running", "finished",
                                               "interrupted"]
    assert [s.value for s in RunningStage] == ["train", "sanity_check", "validate", "test",
                                              "predict"]


def test_running_stage_properties():
    assert [s.dataloader_prefix for s in RunningStage] == ["train", "val", "val", "test",
                                                          "predict"]
    assert [s.evaluating for s in RunningStage] == [False, True, True, True, False]
    assert [s.stopped for s in TrainerStatus] == [False, False, True, True]
    state = TrainerState()
    assert not state.finished and not state.stopped
    state.status = TrainerStatus.FINISHED
    assert state.finished and state.stopped
    state.status = TrainerStatus.INTERRUPTED
    assert not state.finished and state.stopped


def test_stage_setters():
    """``trainer.training = True`` enters the stage; ``= False`` leaves it only when it is the
    running one (Lightning's setters)."""
    trainer = fulmen.Trainer()
    trainer.training = True
    assert trainer.state.stage == RunningStage.TRAINING and trainer.training
    trainer.validating = False  # not the running stage: nothing changes
    assert trainer.state.stage == RunningStage.TRAINING
    trainer.validating = True
    assert trainer.validating and not trainer.training and trainer.evaluating
    trainer.validating = False
    assert trainer.state.stage is None and not trainer.evaluating
    for flag, stage in (("testing", RunningStage.TESTING), ("predicting", RunningStage.PREDICTING),
                        ("sanity_checking", RunningStage.SANITY_CHECKING)):
        setattr(trainer, flag, True)
        assert trainer.state.stage == stage and getattr(trainer, flag)
        setattr(trainer, flag, False)
        assert trainer.state.stage is None


def test_validation_inside_fit_is_not_training(tmp_path):
    """Inside fit's validation loop ``trainer.training`` is False and ``trainer.validating``
    True; training resumes in the training stage; ``state.fn`` stays fit throughout."""
    seen: dict[str, tuple[Any, ...]] = {}

    class Model(BoringModel):
        def validation_step(self, batch, batch_idx):
            t = self.trainer
            seen.setdefault("sanity" if t.sanity_checking else "val",
                            (t.training, t.validating, t.sanity_checking, t.state.fn))
            return super().validation_step(batch, batch_idx)

        def training_step(self, batch, batch_idx):
            t = self.trainer
            seen[f"train{batch_idx}"] = (t.training, t.validating, t.sanity_checking, t.state.fn)
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=4,
                             limit_val_batches=1, val_check_interval=2, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False)
    trainer.fit(Model())
    assert seen["sanity"] == (False, False, True, "fit")
    assert seen["val"] == (False, True, False, "fit")
    assert seen["train3"] == (True, False, False, "fit")  # after the mid-epoch validation
    assert trainer.state == TrainerState(TrainerStatus.FINISHED, TrainerFn.FITTING, None)


def _records(command: list[str], cwd: Path) -> list[list[Any]]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=cwd,
                          env={**env, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("STATES"))
    return json.loads(line[len("STATES"):])


@pytest.mark.timeout(300)
def test_states_in_every_hook_match_lightning(tmp_path):
    """The same Lightning script on the real Lightning and through ``fulmen run``: the method,
    stage, status and every stage flag in each hook (and after each call) are the same."""
    if importlib.util.find_spec("lightning") is None:  # not imported here: tests/core/dropin
        pytest.skip("the real Lightning is not installed")  # checks it is not in sys.modules
    script = str(SCRIPTS / "states_probe.py")
    lightning = _records([sys.executable, script], tmp_path)
    ours = _records([sys.executable, "-m", "fulmen", "run", script], tmp_path)
    failed = next(i for i, r in enumerate(ours) if r[0] == "callback.on_exception")
    assert ours[failed + 1][:4] == ["callback.teardown", "fit", "train", "interrupted"]
    del ours[failed + 1]  # fulmen also tears down after a failure (see the module docstring)
    assert ours == lightning
    where = [r[0] for r in lightning]
    assert "callback.on_sanity_check_start" in where and "callback.on_exception" in where
