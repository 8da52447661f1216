"""Bad settings, held as data: each gets a ConfigurationError that echoes the value, before any
process starts or file is written. (Cases from the operator-experience review that used to crash
inside fulmen or torch, or were accepted silently.)"""

from __future__ import annotations

import pytest

import fulmen
from fulmen import ConfigurationError

TRAINER_CASES = [
    ({"accelerator": None}, "accelerator=None): give 'auto', a registered name"),
    ({"accelerator": ""}, "accelerator=''): give 'auto'"),
    ({"strategy": None}, "strategy=None): give 'auto'"),
    ({"val_check_interval": "x"}, "val_check_interval='x'): expected a finite number"),
    ({"max_time": {"hour": 1}}, "the keys are datetime.timedelta's: days, hours, minutes"),
    ({"max_time": {"hours": -1}}, "a time limit must be positive"),
    ({"max_time": -5}, "max_time=-5): use 'DD:HH:MM:SS'"),
    ({"default_root_dir": 5}, "default_root_dir=5): expected a folder path"),
    ({"benchmark": "yes"}, "benchmark='yes'): use True, False, None"),
    ({"devices": 1_000_000, "accelerator": "cpu"}, "devices=1000000 on the CPU would start"),
    ({"deterministic": "word"}, "deterministic='word'): use True, False, None, 'warn'"),
    ({"sync_batchnorm": "str"}, "sync_batchnorm='str'): use True, False"),
    ({"gradient_clip_val": float("nan")}, "gradient_clip_val=nan): expected a finite number"),
    ({"gradient_clip_val": float("inf")}, "gradient_clip_val=inf): expected a finite number"),
    ({"min_epochs": 5, "max_epochs": 2}, "min_epochs cannot exceed max_epochs"),
    ({"max_epoch": 3}, "unknown argument(s) 'max_epoch' (did you mean 'max_epochs'"),
    ({"enable_checkpointing": "no"}, "enable_checkpointing='no'): use True, False"),
    ({"enable_progress_bar": 1}, "enable_progress_bar=1): use True, False"),
]


@pytest.mark.parametrize(("kwargs", "message"), TRAINER_CASES,
                         ids=[repr(k) for k, _ in TRAINER_CASES])
def test_a_bad_trainer_setting_is_a_configuration_error(tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(logger=False, **kwargs)
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"accelerator": None}, "Lite(accelerator=None)"),
    ({"devices": ""}, "Lite(devices='')"),
    ({"precison": "bf16-mixed"}, "unknown argument(s) 'precison' (did you mean 'precision'"),
])
def test_a_bad_lite_setting_is_a_configuration_error(kwargs, message):
    with pytest.raises(ConfigurationError) as info:
        fulmen.Lite(**kwargs)
    assert message in str(info.value)
