"""Lightning's ``tests_pytorch/callbacks/test_lambda_function.py``, ported.

Differences: an unknown hook name is a ``ConfigurationError`` (Lightning's explicit keyword list
makes it a ``TypeError``); a value that is not a function warns and is left out (Lightning keeps
it and never calls it).
"""

from __future__ import annotations

from functools import partial

import pytest
from boring import BoringModel

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import LambdaCallback
from fulmen.callbacks.lambda_function import HOOKS


def test_lambda_call(tmp_path):
    fulmen.seed_everything(42)

    class CustomException(Exception):
        pass

    class CustomModel(BoringModel):
        def on_train_epoch_start(self):
            if self.current_epoch > 1:
                raise CustomException("Custom exception to trigger `on_exception` hooks")

    checker = set()

    def call(hook, *_, **__):
        checker.add(hook)

    hooks_args = {h: partial(call, h) for h in HOOKS}
    model = CustomModel()
    common = {"default_root_dir": tmp_path, "logger": False, "enable_progress_bar": False,
              "enable_model_summary": False}
    trainer = fulmen.Trainer(max_epochs=1, limit_train_batches=1, limit_val_batches=1,
                             callbacks=[LambdaCallback(**hooks_args)], **common)
    trainer.fit(model)
    ckpt_path = trainer.checkpoint_callback.best_model_path

    trainer = fulmen.Trainer(max_epochs=3, limit_train_batches=1, limit_val_batches=1,
                             limit_test_batches=1, limit_predict_batches=1,
                             callbacks=[LambdaCallback(**hooks_args)], **common)
    with pytest.raises(CustomException):
        trainer.fit(model, ckpt_path=ckpt_path)
    trainer.test(model)
    trainer.predict(model)
    assert checker == set(HOOKS)


def test_lambda_bad_input():
    with pytest.raises(ConfigurationError, match="on_train_epoch_ends, which is not a hook"):
        LambdaCallback(on_train_epoch_ends=print)
    # Lightning keeps a value that is not a function and never calls it: a warning, nothing runs
    with pytest.warns(UserWarning, match=r"LambdaCallback\(setup=3\) is not a function"):
        assert LambdaCallback(setup=3).setup != 3
