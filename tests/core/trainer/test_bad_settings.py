"""Bad settings, held as data: each gets a ConfigurationError that echoes the value, before any
process starts or file is written. (Cases from the operator-experience review that used to crash
inside fulmen or torch, or were accepted silently, then one or more wrong values for every other
Trainer, Lite and built-in callback argument, and inconsistent rank variables.)

Settings that Lightning 2.6 runs (checked by running each with Lightning 2.6.6) are not refused:
they are taken as Lightning takes them, with a warning that names the value to pass
(``test_a_setting_lightning_runs_is_taken_with_a_warning``)."""

from __future__ import annotations

import warnings

import pytest

import fulmen
from fulmen import ConfigurationError

TRAINER_CASES = [
    ({"accelerator": None}, "accelerator=None): give 'auto', a registered name"),
    ({"accelerator": ""}, "accelerator=''): give 'auto'"),
    ({"strategy": None}, "strategy=None): give 'auto'"),
    ({"val_check_interval": "x"}, "val_check_interval='x'): use 'DD:HH:MM:SS'"),
    ({"max_time": {"hour": 1}}, "the keys are datetime.timedelta's: days, hours, minutes"),
    ({"max_time": {"hours": -1}}, "a time limit must be positive"),
    ({"max_time": -5}, "max_time=-5): use 'DD:HH:MM:SS'"),
    ({"default_root_dir": 5}, "default_root_dir=5): expected a folder path"),
    ({"devices": 1_000_000, "accelerator": "cpu"}, "devices=1000000 on the CPU would start"),
    ({"gradient_clip_val": float("nan")}, "gradient_clip_val=nan): expected a finite number"),
    ({"gradient_clip_val": float("inf")}, "gradient_clip_val=inf): expected a finite number"),
    ({"max_epoch": 3}, "unknown argument(s) 'max_epoch' (did you mean 'max_epochs'"),
    # every other Trainer argument, one or two wrong values each
    ({"accelerator": "tpu"}, "accelerator='tpu' is not a registered accelerator name"),
    ({"accelerator": 5}, "accelerator=5 is not a registered accelerator name"),
    ({"strategy": "ddpp"}, "strategy='ddpp' is not a registered strategy name. Did you mean "
                           "'ddp'?"),
    ({"strategy": 3}, "strategy=3 is not a registered strategy name"),
    ({"devices": 0}, "devices=0 is not valid for accelerator 'cpu'"),
    ({"devices": -2}, "devices=-2 is not valid"),
    ({"devices": "abc"}, "devices='abc' is not valid"),
    ({"devices": [0, 0]}, "devices=[0, 0] is not valid"),
    ({"devices": 2.5}, "devices=2.5 is not valid"),
    ({"devices": 3, "strategy": "single_device"}, "strategy 'single_device' drives at most 1"),
    ({"strategy": "dp", "accelerator": "cpu"}, "strategy 'dp' does not run on accelerator 'cpu'"),
    ({"num_nodes": 0}, "num_nodes=0 must be a positive int"),
    ({"num_nodes": "2"}, "num_nodes='2' must be a positive int"),
    ({"num_nodes": True}, "num_nodes=True must be a positive int"),
    ({"precision": "17"}, "precision='17' is not a registered precision name"),
    ({"precision": None}, "precision=None: expected a registered precision name"),
    ({"plugins": ["nope"]}, "no active plugin registers an environment, a precision or a stop "
                            "notice named"),
    ({"plugins": 5}, "got 5 of type int, which fulmen does not know"),
    ({"logger": 5}, "logger=5 (int); use True, False, a registered logger name"),
    ({"callbacks": "x"}, "callbacks got a str; it takes fulmen.Callback objects"),
    ({"max_epochs": "3"}, "max_epochs='3'): expected an int >= 0, -1 for no limit"),
    ({"max_steps": -5}, "max_steps=-5): expected an int >= 0, -1 for no limit"),
    ({"max_steps": None}, "max_steps=None): expected an int >= 0, -1 for no limit"),
    # Lightning runs a zero time limit (and trains nothing); fulmen would train one batch first
    ({"max_time": "00:00:00:00"}, "max_time='00:00:00:00'): a time limit must be positive"),
    ({"max_time": "1:2"}, "max_time='1:2'): use 'DD:HH:MM:SS'"),
    ({"limit_val_batches": "all"}, "limit_val_batches='all'): give a number of batches"),
    ({"limit_test_batches": True}, "limit_test_batches=True): give a number of batches"),
    ({"limit_predict_batches": -0.5}, "limit_predict_batches=-0.5): give a number of batches"),
    ({"overfit_batches": -1}, "overfit_batches=-1): give a number of batches"),
    ({"val_check_interval": 1.5}, "val_check_interval=1.5): give a number of training batches"),
    ({"val_check_interval": True}, "val_check_interval=True): expected a finite number"),
    ({"check_val_every_n_epoch": 0}, "check_val_every_n_epoch=0): expected an int >= 1"),
    ({"fast_dev_run": "yes"}, "fast_dev_run='yes'): use True, False or a number of batches"),
    ({"accumulate_grad_batches": 0}, "accumulate_grad_batches=0): expected an int >= 1"),
    ({"accumulate_grad_batches": {0: 2}}, "accumulate_grad_batches={0: 2}): expected an int"),
    ({"gradient_clip_val": "1"}, "gradient_clip_val='1'): expected a finite number >= 0"),
    ({"gradient_clip_algorithm": 5}, "gradient_clip_algorithm=5): use 'norm' or 'value'"),
    ({"profiler": "fast"}, "profiler='fast'): use one of 'simple', 'advanced', 'pytorch'"),
    ({"compile": "yes"}, "compile='yes'): use True, False, or a dict"),
    ({"barebones": True, "logger": True}, "barebones=True, logger=True)` was passed. Logging "),
    ({"reload_dataloaders_every_n_epochs": -1}, "reload_dataloaders_every_n_epochs=-1): "
                                                "`reload_dataloaders_every_n_epochs` should be an "
                                                "int >= 0, got -1"),
    ({"gpus": 1}, "Trainer(gpus=1) was read as accelerator='gpu', devices=1: "),
    ({"tpu_cores": 8}, "Trainer(tpu_cores=8) was read as accelerator='tpu', devices=8: "),
]


@pytest.mark.parametrize(("kwargs", "message"), TRAINER_CASES,
                         ids=[repr(k) for k, _ in TRAINER_CASES])
def test_a_bad_trainer_setting_is_a_configuration_error(tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(**{"logger": False, **kwargs})
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


LITE_CASES = [
    ({"accelerator": None}, "Lite(accelerator=None)"),
    ({"devices": ""}, "Lite(devices='')"),
    ({"precison": "bf16-mixed"}, "unknown argument(s) 'precison' (did you mean 'precision'"),
    ({"accelerator": 5}, "accelerator=5 is not a registered accelerator name"),
    ({"strategy": "ddpp"}, "Did you mean 'ddp'?"),
    ({"devices": 0}, "devices=0 is not valid for accelerator 'cpu'"),
    ({"num_nodes": 0}, "num_nodes=0 must be a positive int"),
    ({"precision": "17"}, "precision='17' is not a registered precision name"),
    ({"plugins": ["nope"]}, "no active plugin registers an environment, a precision or a stop "
                            "notice named"),
    ({"callbacks": 5}, "Lite(callbacks=5): got 5; callbacks takes objects with hook methods"),
    ({"loggers": [None]}, "loggers=[None]: the entry None (NoneType) is not a logger; use True, "),
    ({"gpus": 1}, "Lite(gpus=1) was read as accelerator='gpu', devices=1: "),
    ({"tpu_cores": 8}, "Lite(tpu_cores=8) was read as accelerator='tpu', devices=8: "),
]


@pytest.mark.parametrize(("kwargs", "message"), LITE_CASES, ids=[repr(k) for k, _ in LITE_CASES])
def test_a_bad_lite_setting_is_a_configuration_error(kwargs, message):
    with pytest.raises(ConfigurationError) as info:
        fulmen.Lite(**kwargs)
    assert message in str(info.value)


CALLBACK_CASES = [
    ("ModelCheckpoint", {"mode": "avg"}, "`mode` can be min, max but got avg"),
    ("ModelCheckpoint", {"save_top_k": -2}, "Invalid value for save_top_k=-2"),
    ("ModelCheckpoint", {"save_top_k": 1.5}, "Invalid value for save_top_k=1.5"),
    ("ModelCheckpoint", {"every_n_train_steps": -1}, "every_n_train_steps=-1. Must be >= 0"),
    ("ModelCheckpoint", {"every_n_epochs": -1}, "every_n_epochs=-1. Must be >= 0"),
    ("ModelCheckpoint", {"every_n_train_steps": 2, "every_n_epochs": 2},
     "should be mutually exclusive"),
    ("ModelCheckpoint", {"train_time_interval": 5}, "train_time_interval=5: use a datetime"),
    ("ModelCheckpoint", {"monitor": 5}, "monitor=5): expected a logged metric's name or None"),
    ("ModelCheckpoint", {"filename": 5}, "filename=5): expected a file name pattern or None"),
    ("ModelCheckpoint", {"dirpath": 5}, "dirpath=5): expected a folder path"),
    ("EarlyStopping", {"monitor": "v", "mode": "avg"}, "`mode` can be min, max, got avg"),
    ("EarlyStopping", {"monitor": ""}, "monitor='': name a logged metric"),
    ("EarlyStopping", {"monitor": "v", "min_delta": "x"}, "min_delta='x'): expected a finite"),
    ("EarlyStopping", {"monitor": "v", "min_delta": float("nan")}, "min_delta=nan): expected"),
    ("EarlyStopping", {"monitor": "v", "stopping_threshold": "x"}, "stopping_threshold='x')"),
    ("EarlyStopping", {"monitor": "v", "divergence_threshold": "x"}, "divergence_threshold='x')"),
    ("LearningRateMonitor", {"logging_interval": "batch"}, "use 'step', 'epoch' or None"),
    ("Timer", {"interval": "batch"}, "Timer(interval='batch')`. Possible choices are: step"),
    ("Timer", {"duration": "1h"}, "Timer(duration='1h')` is not a valid duration"),
    ("Timer", {"duration": {"hour": 1}}, "the keys are datetime.timedelta's: days, hours"),
    ("OnExceptionCheckpoint", {"dirpath": ".", "filename": ""}, "the filename cannot be empty"),
    ("OnExceptionCheckpoint", {"dirpath": 5}, "dirpath=5): expected a folder path"),
    ("PredictionWriter", {"write_interval": "x"},
     "should be one of ['batch', 'epoch', 'batch_and_epoch']"),
    ("PredictionWriter", {"output_dir": 5}, "output_dir=5): expected a folder path"),
    ("ModelSummary", {"max_depth": -2}, "max_depth=-2): use an int >= -1"),
    ("ModelSummary", {"max_depth": "x"}, "max_depth='x'): use an int >= -1"),
]


@pytest.mark.parametrize(("name", "kwargs", "message"), CALLBACK_CASES,
                         ids=[f"{n}{k!r}" for n, k, _ in CALLBACK_CASES])
def test_a_bad_callback_argument_is_a_configuration_error(tmp_path, monkeypatch, name, kwargs,
                                                           message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as info:
        getattr(fulmen.callbacks, name)(**kwargs)
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []


LENIENT_TRAINER_CASES = [
    ({"benchmark": "yes"}, "benchmark='yes'): expected True, False, None; 'yes' is taken as True"),
    ({"deterministic": "word"}, "deterministic='word'): expected True, False, None, 'warn'; "
                                "'word' is taken as True"),
    ({"deterministic": 1}, "deterministic=1): expected True, False, None, 'warn'; 1 is taken "
                           "as True"),
    ({"sync_batchnorm": "str"}, "sync_batchnorm='str'): expected True, False; 'str' is taken as "
                                "True (Lightning takes any value by its truth). Pass True"),
    ({"enable_checkpointing": "no"}, "enable_checkpointing='no'): expected True, False; 'no' is "
                                     "taken as True"),
    ({"enable_progress_bar": 0}, "enable_progress_bar=0): expected True, False; 0 is taken as "
                                 "False"),
    ({"enable_model_summary": "no"}, "enable_model_summary='no'): expected True, False"),
    ({"detect_anomaly": 0}, "detect_anomaly=0): expected True, False; 0 is taken as False"),
    ({"use_distributed_sampler": "no"}, "use_distributed_sampler='no'): expected True, False"),
    ({"inference_mode": 0}, "inference_mode=0): expected True, False"),
    ({"barebones": 0}, "barebones=0): expected True, False; 0 is taken as False"),
    ({"enable_autolog_hparams": "x"}, "enable_autolog_hparams='x'): expected True, False"),
    ({"suggest_integrations": "x"}, "suggest_integrations='x'): expected True, False"),
    ({"min_epochs": 5, "max_epochs": 2}, "min_epochs exceeds max_epochs, so training stops at "
                                         "max_epochs (as Lightning does)"),
    ({"min_epochs": -1}, "min_epochs=-1): expected an int >= 0 or None; Lightning runs it as "
                         "min_epochs=0, and so does fulmen. Pass 0"),
    ({"min_steps": -1}, "min_steps=-1): expected an int >= 0 or None; Lightning runs it as "
                        "min_steps=0"),
    ({"num_sanity_val_steps": -2}, "num_sanity_val_steps=-2): expected an int >= 0, -1 for no "
                                   "limit; Lightning runs it as num_sanity_val_steps=0"),
    ({"log_every_n_steps": -1}, "log_every_n_steps=-1): expected an int >= 0; Lightning runs "
                                "it as log_every_n_steps=-1"),
    ({"accumulate_grad_batches": 2.0}, "accumulate_grad_batches=2.0): expected an int >= 1; "
                                       "taken as 2, as Lightning does"),
    ({"max_steps": 3.0}, "max_steps=3.0): expected an int >= 0, -1 for no limit; taken as 3"),
    ({"gradient_clip_val": -1}, "gradient_clip_val=-1): expected a finite number >= 0 or None; "
                                "Lightning clips with -1.0, and so does fulmen"),
    ({"gradient_clip_val": True}, "gradient_clip_val=True): expected a finite number >= 0 or "
                                  "None; Lightning clips with 1.0"),
]


@pytest.mark.parametrize(("kwargs", "message"), LENIENT_TRAINER_CASES,
                         ids=[repr(k) for k, _ in LENIENT_TRAINER_CASES])
def test_a_setting_lightning_runs_is_taken_with_a_warning(tmp_path, monkeypatch, kwargs,
                                                          message):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = fulmen.Trainer(**{"logger": False, **kwargs})
    assert any(message in str(w.message) for w in caught), [str(w.message) for w in caught]
    for flag, value in kwargs.items():
        taken = getattr(trainer, flag, None)
        if isinstance(value, str) and flag != "deterministic":
            assert taken is None or taken is True  # by its truth
        elif flag in ("max_steps", "accumulate_grad_batches"):
            assert taken == int(value) and type(taken) is int


def test_an_empty_default_root_dir_is_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert fulmen.Trainer(logger=False, default_root_dir="").default_root_dir == str(tmp_path)


LENIENT_CALLBACK_CASES = [
    ("ModelCheckpoint", {"save_last": "yes"}, "save_last='yes'): expected True, False, None or "
                                              "'link'; taken as True"),
    ("ModelCheckpoint", {"save_top_k": True}, "save_top_k=True): expected an int; taken as 1"),
    ("ModelCheckpoint", {"every_n_epochs": 2.0}, "every_n_epochs=2.0): expected an int; taken "
                                                 "as 2"),
    ("ModelCheckpoint", {"verbose": "x"}, "verbose='x'): expected True, False; 'x' is taken as "
                                          "True"),
    ("ModelCheckpoint", {"save_weights_only": 1}, "save_weights_only=1): expected True, False"),
    ("ModelCheckpoint", {"auto_insert_metric_name": 0}, "auto_insert_metric_name=0): expected"),
    ("ModelCheckpoint", {"save_on_train_epoch_end": "x"},
     "save_on_train_epoch_end='x'): expected True, False, None"),
    ("ModelCheckpoint", {"enable_version_counter": "x"}, "enable_version_counter='x'): expected"),
    ("ModelCheckpoint", {"save_on_exception": "x"}, "save_on_exception='x'): expected True"),
    ("EarlyStopping", {"monitor": "v", "patience": -1}, "EarlyStopping(patience=-1): expected an "
                                                        "int >= 0"),
    ("EarlyStopping", {"monitor": "v", "patience": 1.5}, "EarlyStopping(patience=1.5)"),
    ("EarlyStopping", {"monitor": "v", "check_finite": "x"}, "check_finite='x'): expected True"),
    ("EarlyStopping", {"monitor": "v", "verbose": 1}, "verbose=1): expected True, False"),
    ("EarlyStopping", {"monitor": "v", "strict": "x"}, "strict='x'): expected True, False"),
    ("EarlyStopping", {"monitor": "v", "check_on_train_epoch_end": 1},
     "check_on_train_epoch_end=1): expected True, False, None"),
    ("EarlyStopping", {"monitor": "v", "log_rank_zero_only": 1}, "log_rank_zero_only=1)"),
    ("LearningRateMonitor", {"log_momentum": 1}, "log_momentum=1): expected True, False"),
    ("Timer", {"verbose": "x"}, "Timer(verbose='x'): expected True, False"),
    ("TQDMProgressBar", {"refresh_rate": -1}, "refresh_rate=-1): a negative rate turns the bars "
                                              "off, as in Lightning"),
    ("TQDMProgressBar", {"leave": "x"}, "leave='x'): expected True, False"),
    ("TQDMProgressBar", {"interactive": "x"}, "interactive='x'): expected True, False, None"),
    ("LambdaCallback", {"on_fit_start": 3}, "LambdaCallback(on_fit_start=3) is not a function, so "
                                            "nothing runs at on_fit_start"),
]


@pytest.mark.parametrize(("name", "kwargs", "message"), LENIENT_CALLBACK_CASES,
                         ids=[f"{n}{k!r}" for n, k, _ in LENIENT_CALLBACK_CASES])
def test_a_callback_argument_lightning_runs_is_taken_with_a_warning(name, kwargs, message):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(fulmen.callbacks, name)(**kwargs)
    assert any(message in str(w.message) for w in caught), [str(w.message) for w in caught]


ENV_CASES = [
    ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' must be a non-negative integer"),
    ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0: a world has at least one process"),
    ({"RANK": "0", "WORLD_SIZE": "two"}, "WORLD_SIZE='two' must be a non-negative integer"),
    ({"RANK": "1"}, "RANK=1 is set but LOCAL_RANK is not"),
    ({"WORLD_SIZE": "2"}, "WORLD_SIZE=2 is set but LOCAL_RANK is not"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 and WORLD_SIZE=2 are set but LOCAL_RANK is not"),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1"}, "LOCAL_RANK='-1' must be a "
                                                           "non-negative integer"),
    ({"RANK": "3", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, "RANK=3 but WORLD_SIZE=2"),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "2"}, "LOCAL_RANK=2 but WORLD_SIZE=2"),
]


@pytest.mark.parametrize(("variables", "message"), ENV_CASES,
                         ids=[repr(v) for v, _ in ENV_CASES])
def test_inconsistent_rank_variables_are_named(monkeypatch, variables, message):
    """Each of these used to be ignored (fulmen started its own processes) or to hang."""
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**variables, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29555"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(logger=False, accelerator="cpu", devices=2, strategy="ddp")
    assert message in str(info.value)


def test_harmless_rank_variables_pass(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert fulmen.Trainer(logger=False, accelerator="cpu", devices=1).world_size == 1
