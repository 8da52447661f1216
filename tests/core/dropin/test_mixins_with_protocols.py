"""Lightning's ``HyperparametersMixin`` (and fulmen's other stand-ins for Lightning's base
classes: the hook mixins, ``Checkpoint``) combine with ``typing.Protocol`` and other ABCs, as
chemprop's ``class ConstrainerFFN(nn.Module, HasHParams, HyperparametersMixin)`` does: a
metaclass of their own made that class a metaclass conflict. The script runs on the real
Lightning and through ``fulmen run``; both print the same."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

SCRIPT = """\
from typing import Protocol

import torch.nn as nn
from lightning.pytorch import LightningModule
from lightning.pytorch.callbacks import Checkpoint, ModelCheckpoint
from lightning.pytorch.core.hooks import CheckpointHooks, DataHooks, ModelHooks
from lightning.pytorch.core.mixins import HyperparametersMixin


class HasHParams(Protocol):
    hparams: dict


class FFN(nn.Module, HasHParams, HyperparametersMixin):
    def __init__(self, width=3):
        super().__init__()
        self.save_hyperparameters()
        self.lin = nn.Linear(width, 1)


class Hooked(ModelHooks, DataHooks, CheckpointHooks, HasHParams):
    pass


class MyCheckpoint(Checkpoint, HasHParams):
    pass


ffn = FFN(5)
print(dict(ffn.hparams), dict(ffn.hparams_initial))
print(isinstance(ffn, HyperparametersMixin), isinstance(LightningModule(), HyperparametersMixin),
      isinstance(LightningModule(), ModelHooks), isinstance(ModelCheckpoint(), Checkpoint),
      issubclass(FFN, Checkpoint), isinstance(MyCheckpoint(), Checkpoint), Hooked.__name__)
"""


@pytest.mark.timeout(240)
@pytest.mark.parametrize("runner", [["-m", "fulmen", "run"], []], ids=["fulmen", "lightning"])
def test_lightning_base_classes_combine_with_protocols(tmp_path, runner) -> None:
    if not runner and importlib.util.find_spec("lightning") is None:
        pytest.skip("the real Lightning is not installed")
    script = tmp_path / "mixins.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, *runner, str(script)], capture_output=True,
                          text=True, timeout=200)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'width': 5} {'width': 5}",
                                        "True True True True False True Hooked"]
