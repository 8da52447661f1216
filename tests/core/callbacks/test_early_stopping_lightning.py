"""Lightning's ``tests_pytorch/callbacks/test_early_stopping.py``, ported to fulmen.

Adapted names: ``lightning.pytorch.Trainer`` -> ``fulmen.Trainer``, ``MisconfigurationException``
-> ``fulmen.ConfigurationError``. Lightning's ``ClassificationModel``/``ClassifDataModule`` need
sklearn; ``BoringModel`` logging its loss takes their place. Where Lightning replaced a method
with a Mock (``_run_early_stopping_check``, ``_evaluate_stopping_criteria``, ``log.info``), a
subclass or a real logging handler observes the same thing.

Deliberate difference (also in docs/migrating.md): monitoring a metric that was never logged is
a ``ConfigurationError`` listing the logged ones (Lightning raises ``RuntimeError``).
"""

from __future__ import annotations

import copy
import logging
import math
import pickle
from types import SimpleNamespace
from typing import Any

import cloudpickle
import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import EarlyStopping, ModelCheckpoint
from fulmen.callbacks.early_stopping import EarlyStoppingReason
from fulmen.seed import seed_everything

Trainer = fulmen.Trainer


class LogsTrainLoss(BoringModel):
    def training_step(self, batch, batch_idx):
        out = super().training_step(batch, batch_idx)
        self.log("train_loss", out["loss"], on_step=False, on_epoch=True)
        return out


def test_early_stopping_state_key():
    early_stopping = EarlyStopping(monitor="val_loss")
    assert early_stopping.state_key == "EarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"


class EarlyStoppingTestRestore(EarlyStopping):
    def __init__(self, expected_state, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.expected_state = expected_state
        self.saved_states = []

    def on_train_start(self, trainer, pl_module):
        if self.expected_state:
            assert self.state_dict() == self.expected_state

    def on_train_epoch_end(self, trainer, pl_module):
        super().on_train_epoch_end(trainer, pl_module)
        self.saved_states.append(self.state_dict().copy())


def test_resume_early_stopping_from_checkpoint(tmp_path):
    """The state saved with a checkpoint is the state at that epoch, and it is restored on resume. (Lightning's last
    step expects an error for resuming past max_epochs; fulmen's resume just trains no further, so here the resumed
    run gets one more epoch.)"""
    seed_everything(42)
    model = LogsTrainLoss()
    checkpoint_callback = ModelCheckpoint(dirpath=tmp_path, monitor="train_loss", save_top_k=1)
    early_stop_callback = EarlyStoppingTestRestore(None, monitor="train_loss")
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stop_callback, checkpoint_callback],
        num_sanity_val_steps=0,
        max_epochs=4,
        limit_train_batches=4,
        limit_val_batches=2,
        logger=False,
        enable_progress_bar=False,
    )
    trainer.fit(model)

    assert len(early_stop_callback.saved_states) == 4

    checkpoint_filepath = checkpoint_callback.kth_best_model_path or checkpoint_callback.best_model_path
    checkpoint = torch.load(checkpoint_filepath, weights_only=True)
    early_stop_callback_state = early_stop_callback.saved_states[checkpoint["epoch"]]
    es_name = "EarlyStoppingTestRestore{'monitor': 'train_loss', 'mode': 'min'}"
    assert checkpoint["callbacks"][es_name] == early_stop_callback_state

    # ensure state is reloaded properly (assertion in the callback)
    early_stop_callback = EarlyStoppingTestRestore(early_stop_callback_state, monitor="train_loss")
    new_trainer = Trainer(
        default_root_dir=tmp_path,
        max_epochs=checkpoint["epoch"] + 2,
        limit_train_batches=4,
        limit_val_batches=2,
        callbacks=[early_stop_callback],
        logger=False,
        enable_progress_bar=False,
    )
    new_trainer.fit(model, ckpt_path=checkpoint_filepath)
    assert len(early_stop_callback.saved_states) == 1


class CountingEarlyStopping(EarlyStopping):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.checks = 0

    def _run_early_stopping_check(self, trainer):
        self.checks += 1


def test_early_stopping_no_extraneous_invocations(tmp_path):
    """Test to ensure that callback methods aren't being invoked outside of the callback handler."""
    early_stop_callback = CountingEarlyStopping(monitor="train_loss")
    expected_count = 4
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stop_callback],
        limit_train_batches=4,
        limit_val_batches=4,
        max_epochs=expected_count,
        enable_checkpointing=False,
        logger=False,
    )
    trainer.fit(LogsTrainLoss())

    assert trainer.early_stopping_callback == early_stop_callback
    assert trainer.early_stopping_callbacks == [early_stop_callback]
    assert early_stop_callback.checks == expected_count


@pytest.mark.parametrize(
    ("loss_values", "patience", "expected_stop_epoch"),
    [([6, 5, 5, 5, 5, 5], 3, 4), ([6, 5, 4, 4, 3, 3], 1, 3), ([6, 5, 6, 5, 5, 5], 3, 4)],
)
def test_early_stopping_patience(tmp_path, loss_values: list, patience: int, expected_stop_epoch: int):
    """Test to ensure that early stopping is not triggered before patience is exhausted."""

    class ModelOverrideValidationReturn(BoringModel):
        validation_return_values = torch.tensor(loss_values)

        def on_validation_epoch_end(self):
            loss = self.validation_return_values[self.current_epoch]
            self.log("test_val_loss", loss)

    model = ModelOverrideValidationReturn()
    early_stop_callback = EarlyStopping(monitor="test_val_loss", patience=patience, verbose=True)
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stop_callback],
        num_sanity_val_steps=0,
        max_epochs=10,
        enable_progress_bar=False,
        logger=False,
    )
    trainer.fit(model)
    assert trainer.current_epoch - 1 == expected_stop_epoch


@pytest.mark.parametrize("validation_step_none", [True, False])
@pytest.mark.parametrize(
    ("loss_values", "patience", "expected_stop_epoch"),
    [([6, 5, 5, 5, 5, 5], 3, 4), ([6, 5, 4, 4, 3, 3], 1, 3), ([6, 5, 6, 5, 5, 5], 3, 4)],
)
def test_early_stopping_patience_train(
    tmp_path, validation_step_none: bool, loss_values: list, patience: int, expected_stop_epoch: int
):
    """Test to ensure that early stopping is not triggered before patience is exhausted. (``validation_step = None``
    becomes a module without validation data.)"""

    class ModelOverrideTrainReturn(BoringModel):
        train_return_values = torch.tensor(loss_values)

        def on_train_epoch_end(self):
            loss = self.train_return_values[self.current_epoch]
            self.log("train_loss", loss)

        def val_dataloader(self):
            return None if validation_step_none else super().val_dataloader()

    model = ModelOverrideTrainReturn()

    early_stop_callback = EarlyStopping(
        monitor="train_loss", patience=patience, verbose=True, check_on_train_epoch_end=True
    )
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stop_callback],
        num_sanity_val_steps=0,
        max_epochs=10,
        enable_progress_bar=False,
        logger=False,
    )
    trainer.fit(model)
    assert trainer.current_epoch - 1 == expected_stop_epoch


def _same_vars(a: Any, b: Any) -> bool:
    return vars(a).keys() == vars(b).keys() and all(
        torch.equal(v, vars(b)[k]) if isinstance(v, torch.Tensor) else v == vars(b)[k] for k, v in vars(a).items()
    )


def test_pickling():
    early_stopping = EarlyStopping(monitor="foo")

    early_stopping_loaded = pickle.loads(pickle.dumps(early_stopping))
    assert _same_vars(early_stopping, early_stopping_loaded)

    early_stopping_loaded = cloudpickle.loads(cloudpickle.dumps(early_stopping))
    assert _same_vars(early_stopping, early_stopping_loaded)


def test_early_stopping_no_val_step(tmp_path):
    """Test that early stopping callback falls back to training metrics when no validation defined."""

    class NoValidation(LogsTrainLoss):
        def val_dataloader(self):
            return None

    stopping = EarlyStopping(monitor="train_loss", min_delta=0.1, patience=0, check_on_train_epoch_end=True)
    trainer = Trainer(default_root_dir=tmp_path, callbacks=[stopping], limit_train_batches=0.2, max_epochs=10,
                      logger=False, enable_progress_bar=False)
    trainer.fit(NoValidation())

    assert trainer.current_epoch < trainer.max_epochs - 1


@pytest.mark.parametrize(
    ("stopping_threshold", "divergence_threshold", "losses", "expected_epoch"),
    [
        (None, None, [8, 4, 2, 3, 4, 5, 8, 10], 5),
        (2.9, None, [9, 8, 7, 6, 5, 6, 4, 3, 2, 1], 8),
        (None, 15.9, [9, 4, 2, 16, 32, 64], 3),
        (float("inf"), None, [9, 8, 7], 0),  # fulmen addition: Lightning takes inf (stop at once)
        (None, float("-inf"), [9, 8, 7], 0),  # and -inf as divergence (any value diverges)
    ],
)
def test_early_stopping_thresholds(tmp_path, stopping_threshold, divergence_threshold, losses, expected_epoch):
    class CurrentModel(BoringModel):
        def on_validation_epoch_end(self):
            val_loss = losses[self.current_epoch]
            self.log("abc", val_loss)

    model = CurrentModel()
    early_stopping = EarlyStopping(
        monitor="abc", stopping_threshold=stopping_threshold, divergence_threshold=divergence_threshold
    )
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stopping],
        limit_train_batches=0.2,
        limit_val_batches=0.2,
        max_epochs=20,
        logger=False,
        enable_progress_bar=False,
    )
    trainer.fit(model)
    assert trainer.current_epoch - 1 == expected_epoch, "early_stopping failed"


@pytest.mark.parametrize("stop_value", [torch.tensor(torch.inf), torch.tensor(torch.nan)])
def test_early_stopping_on_non_finite_monitor(tmp_path, stop_value):
    losses = [4, 3, stop_value, 2, 1]
    expected_stop_epoch = 2

    class CurrentModel(BoringModel):
        def on_validation_epoch_end(self):
            val_loss = losses[self.current_epoch]
            self.log("val_loss", val_loss)

    model = CurrentModel()
    early_stopping = EarlyStopping(monitor="val_loss", check_finite=True)
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stopping],
        limit_train_batches=0.2,
        limit_val_batches=0.2,
        max_epochs=10,
        logger=False,
        enable_progress_bar=False,
    )
    trainer.fit(model)
    assert trainer.current_epoch - 1 == expected_stop_epoch
    assert early_stopping.stopped_epoch == expected_stop_epoch


class AlwaysStop(EarlyStopping):
    """Stops at every check (Lightning patches ``_evaluate_stopping_criteria`` with a Mock)."""

    def __init__(self, *args, answers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers = list(answers) if answers is not None else None
        self.calls = 0

    def _evaluate_stopping_criteria(self, current):
        self.calls += 1
        return self.answers.pop(0) if self.answers is not None else (True, "")


@pytest.mark.parametrize(
    ("limit_train_batches", "min_epochs", "min_steps", "stop_step"),
    [
        (3, 0, 10, 10),
        (5, 0, 10, 10),
        (3, 2, 0, 6),
        (5, 2, 0, 10),
        (3, 1, 10, 10),
        (5, 1, 10, 10),
        (3, 3, 10, 10),
        (5, 3, 10, 15),
    ],
)
def test_min_epochs_min_steps_global_step(tmp_path, limit_train_batches, min_epochs, min_steps, stop_step):
    class TestModel(BoringModel):
        def training_step(self, batch, batch_idx):
            self.log("foo", batch_idx)
            return super().training_step(batch, batch_idx)

    es_callback = AlwaysStop("foo")
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=es_callback,
        limit_val_batches=0,
        limit_train_batches=limit_train_batches,
        min_epochs=min_epochs,
        min_steps=min_steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TestModel())

    expected_epochs = max(math.ceil(min_steps / limit_train_batches), min_epochs)
    assert trainer.should_stop
    assert trainer.current_epoch == expected_epochs
    assert trainer.global_step == stop_step


def test_early_stopping_mode_options():
    with pytest.raises(ConfigurationError, match=r"`mode` can be .* got unknown_option"):
        EarlyStopping(monitor="foo", mode="unknown_option")


class EarlyStoppingModel(BoringModel):
    def __init__(self, expected_end_epoch: int, early_stop_on_train: bool, dist_diverge_epoch: int | None = None):
        super().__init__()
        self.expected_end_epoch = expected_end_epoch
        self.early_stop_on_train = early_stop_on_train
        self.dist_diverge_epoch = dist_diverge_epoch

    def _dist_diverge(self):
        should_diverge = (
            self.dist_diverge_epoch and self.current_epoch >= self.dist_diverge_epoch and self.trainer.global_rank == 0
        )
        return 10 if should_diverge else None

    def _epoch_end(self) -> None:
        losses = [8, 4, 2, 3, 4, 5, 8, 10]
        loss = self._dist_diverge() or losses[self.current_epoch]
        self.log("abc", torch.tensor(loss))
        self.log("cba", torch.tensor(0))

    def on_train_epoch_end(self):
        if not self.early_stop_on_train:
            return
        self._epoch_end()

    def on_validation_epoch_end(self):
        if self.early_stop_on_train:
            return
        self._epoch_end()

    def on_train_end(self) -> None:
        assert self.trainer.current_epoch - 1 == self.expected_end_epoch, "Early Stopping Failed"


_ES_CHECK = {"check_on_train_epoch_end": True}
_ES_CHECK_P3 = {"patience": 3, "check_on_train_epoch_end": True}


@pytest.mark.parametrize(
    ("callbacks", "expected_stop_epoch", "check_on_train_epoch_end"),
    [
        ([EarlyStopping("abc"), EarlyStopping("cba", patience=3)], 3, False),
        ([EarlyStopping("cba", patience=3), EarlyStopping("abc")], 3, False),
        ([EarlyStopping("abc", **_ES_CHECK), EarlyStopping("cba", **_ES_CHECK_P3)], 3, True),
        ([EarlyStopping("cba", **_ES_CHECK_P3), EarlyStopping("abc", **_ES_CHECK)], 3, True),
    ],
)
def test_multiple_early_stopping_callbacks(tmp_path, callbacks, expected_stop_epoch, check_on_train_epoch_end):
    """Ensure when using multiple early stopping callbacks we stop if any signals we should stop. (Lightning's five
    ddp_spawn cases are not repeated here: test_callback_ranks.py runs EarlyStopping under ddp on two real processes,
    with rank 0 alone diverging, and checks that every rank stops at the same epoch.)"""
    model = EarlyStoppingModel(expected_stop_epoch, check_on_train_epoch_end)
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=copy.deepcopy(callbacks),
        limit_train_batches=0.1,
        limit_val_batches=0.1,
        max_epochs=20,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
    )
    trainer.fit(model)


@pytest.mark.parametrize(
    "case",
    {
        "val_check_interval": {"val_check_interval": 0.3, "limit_train_batches": 10, "max_epochs": 10},
        "check_val_every_n_epoch": {"check_val_every_n_epoch": 2, "max_epochs": 5},
    }.items(),
)
def test_check_on_train_epoch_end_smart_handling(tmp_path, case):
    class TestModel(BoringModel):
        def validation_step(self, batch, batch_idx):
            self.log("foo", 1)
            return super().validation_step(batch, batch_idx)

    case, kwargs = case
    model = TestModel()
    callback = AlwaysStop(monitor="foo", answers=[(False, "A"), (True, "B")])
    trainer = Trainer(
        default_root_dir=tmp_path,
        limit_val_batches=1,
        callbacks=callback,
        enable_progress_bar=False,
        logger=False,
        **kwargs,
    )
    trainer.fit(model)

    assert callback.calls == 2
    if case == "val_check_interval":
        assert trainer.global_step == 2 * int(trainer.limit_train_batches * trainer.val_check_interval)
    else:
        assert trainer.current_epoch == 2 * trainer.check_val_every_n_epoch


def test_early_stopping_squeezes():
    """A metric of shape (1, 1, 1) is compared as a scalar (Lightning sets it into the trainer's metrics and patches
    ``_evaluate_stopping_criteria``; here a stand-in trainer holds it and a subclass records the value)."""

    class Recording(EarlyStopping):
        def _evaluate_stopping_criteria(self, current):
            self.seen = current
            return False, ""

    early_stopping = Recording(monitor="foo")
    real = Trainer(logger=False)
    trainer = SimpleNamespace(callback_metrics={"foo": torch.tensor([[[0]]])}, fast_dev_run=False,
                              strategy=real.strategy, should_stop=False, current_epoch=0)
    early_stopping._run_early_stopping_check(trainer)
    assert early_stopping.seen.shape == torch.Size([])
    assert early_stopping.seen == 0


@pytest.mark.parametrize(
    ("log_rank_zero_only", "world_size", "global_rank", "expected_log"),
    [
        (False, 1, 0, "bar"),
        (False, 2, 0, "[rank: 0] bar"),
        (False, 2, 1, "[rank: 1] bar"),
        (True, 1, 0, "bar"),
        (True, 2, 0, "[rank: 0] bar"),
        (True, 2, 1, None),
    ],
)
def test_early_stopping_log_info(log_rank_zero_only, world_size, global_rank, expected_log):
    """Checks that the message is logged (to the ``fulmen`` logger) as expected."""
    trainer = SimpleNamespace(global_rank=global_rank, world_size=world_size)
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    handler = Collect()
    logging.getLogger("fulmen").addHandler(handler)
    try:
        EarlyStopping._log_info(trainer, "bar", log_rank_zero_only)
    finally:
        logging.getLogger("fulmen").removeHandler(handler)
    assert records == ([expected_log] if expected_log else [])


class ModelWithHighLoss(BoringModel):
    def on_validation_epoch_end(self):
        self.log("val_loss", 10.0)


class ModelWithDecreasingLoss(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_losses = [5.0, 3.0, 1.0, 0.5]

    def on_validation_epoch_end(self):
        loss = self.epoch_losses[self.current_epoch] if self.current_epoch < len(self.epoch_losses) else 0.1
        self.log("val_loss", loss)


class ModelWithIncreasingLoss(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_losses = [1.0, 2.0, 5.0, 10.0]

    def on_validation_epoch_end(self):
        loss = self.epoch_losses[self.current_epoch] if self.current_epoch < len(self.epoch_losses) else 15.0
        self.log("val_loss", loss)


class ModelWithNaNLoss(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_losses = [1.0, 0.5, float("nan")]

    def on_validation_epoch_end(self):
        loss = self.epoch_losses[self.current_epoch] if self.current_epoch < len(self.epoch_losses) else float("nan")
        self.log("val_loss", loss)


class ModelWithImprovingLoss(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_losses = [5.0, 4.0, 3.0, 2.0, 1.0]

    def on_validation_epoch_end(self):
        loss = self.epoch_losses[self.current_epoch] if self.current_epoch < len(self.epoch_losses) else 0.1
        self.log("val_loss", loss)


@pytest.mark.parametrize(
    (
        "model_cls",
        "early_stopping_kwargs",
        "trainer_kwargs",
        "expected_reason",
        "reason_message_substr",
        "should_stop",
        "state_dict_override",
    ),
    [
        (
            ModelWithHighLoss,
            {"monitor": "val_loss", "patience": 2, "verbose": True},
            {"max_epochs": 10, "enable_progress_bar": False},
            EarlyStoppingReason.PATIENCE_EXHAUSTED,
            "did not improve",
            True,
            None,
        ),
        (
            ModelWithDecreasingLoss,
            {"monitor": "val_loss", "stopping_threshold": 0.6, "mode": "min", "verbose": True},
            {"max_epochs": 10, "enable_progress_bar": False},
            EarlyStoppingReason.STOPPING_THRESHOLD,
            "Stopping threshold reached",
            True,
            None,
        ),
        (
            ModelWithIncreasingLoss,
            {"monitor": "val_loss", "divergence_threshold": 8.0, "mode": "min", "verbose": True},
            {"max_epochs": 10, "enable_progress_bar": False},
            EarlyStoppingReason.DIVERGENCE_THRESHOLD,
            "Divergence threshold reached",
            True,
            None,
        ),
        (
            ModelWithNaNLoss,
            {"monitor": "val_loss", "check_finite": True, "verbose": True},
            {"max_epochs": 10, "enable_progress_bar": False},
            EarlyStoppingReason.NON_FINITE_METRIC,
            "is not finite",
            True,
            None,
        ),
        (
            ModelWithImprovingLoss,
            {"monitor": "val_loss", "patience": 3, "verbose": True},
            {"max_epochs": 3, "enable_progress_bar": False},
            EarlyStoppingReason.NOT_STOPPED,
            None,
            False,
            None,
        ),
        (
            None,
            {"monitor": "val_loss", "patience": 3},
            {},
            EarlyStoppingReason.PATIENCE_EXHAUSTED,
            "Test message",
            None,
            {"stopping_reason": EarlyStoppingReason.PATIENCE_EXHAUSTED, "stopping_reason_message": "Test message"},
        ),
        (
            None,
            {"monitor": "val_loss", "patience": 3},
            {},
            EarlyStoppingReason.NOT_STOPPED,
            None,
            None,
            {
                "wait_count": 2,
                "stopped_epoch": 5,
                "best_score": torch.tensor(0.5),
                "patience": 3,
            },
        ),
    ],
)
def test_early_stopping_reasons(
    tmp_path,
    model_cls,
    early_stopping_kwargs,
    trainer_kwargs,
    expected_reason,
    reason_message_substr,
    should_stop,
    state_dict_override,
):
    """Test all early stopping reasons in a single parametrized test."""
    if state_dict_override is not None:
        early_stopping = EarlyStopping(**early_stopping_kwargs)
        if "stopping_reason" in state_dict_override:
            early_stopping.stopping_reason = state_dict_override["stopping_reason"]
            early_stopping.stopping_reason_message = state_dict_override["stopping_reason_message"]
            state_dict = early_stopping.state_dict()
            new_early_stopping = EarlyStopping(**early_stopping_kwargs)
            new_early_stopping.load_state_dict(state_dict)
            assert new_early_stopping.stopping_reason == expected_reason
            assert new_early_stopping.stopping_reason_message == reason_message_substr
        else:
            early_stopping.load_state_dict(copy.deepcopy(state_dict_override))
            assert early_stopping.stopping_reason == expected_reason
            assert early_stopping.stopping_reason_message is None
            assert early_stopping.wait_count == state_dict_override["wait_count"]
            assert early_stopping.stopped_epoch == state_dict_override["stopped_epoch"]
        return

    model = model_cls()
    early_stopping = EarlyStopping(**early_stopping_kwargs)
    trainer = Trainer(
        default_root_dir=tmp_path,
        callbacks=[early_stopping],
        logger=False,
        **trainer_kwargs,
    )
    trainer.fit(model)

    assert early_stopping.stopping_reason == expected_reason
    if reason_message_substr is not None:
        assert early_stopping.stopping_reason_message is not None
        assert reason_message_substr in early_stopping.stopping_reason_message
    else:
        assert early_stopping.stopping_reason_message is None
    if should_stop is not None:
        if should_stop:
            assert early_stopping.stopped_epoch > 0
        else:
            assert early_stopping.stopped_epoch == 0


def test_never_logged_metric_lists_the_logged_ones(tmp_path):
    """fulmen: a ConfigurationError naming the metric, what was logged and the fix (Lightning: RuntimeError)."""
    trainer = Trainer(default_root_dir=tmp_path, callbacks=[EarlyStopping("val_los")], max_epochs=1,
                      limit_train_batches=2, limit_val_batches=2, logger=False, enable_progress_bar=False)
    with pytest.raises(ConfigurationError, match=r"EarlyStopping\(monitor='val_los'\) found no metric named "
                                                 r"'val_los'\. Logged metrics: \['train_loss'\].*strict=False"):
        trainer.fit(LogsTrainLoss())
    lenient = EarlyStopping("val_los", strict=False)
    Trainer(default_root_dir=tmp_path, callbacks=[lenient], max_epochs=2, limit_train_batches=2,
            limit_val_batches=2, logger=False, enable_progress_bar=False).fit(LogsTrainLoss())
    assert lenient.wait_count == 0 and lenient.stopping_reason == EarlyStoppingReason.NOT_STOPPED
