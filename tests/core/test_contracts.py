"""Run-time contracts between the kernel and its plugins: what the Trainer hands a strategy
(``RunConfig``), how spawned workers hand results back (``LaunchOwner``), and what a precision
tells a strategy (``param_dtype``, ``compute_dtype``, ``scaler``, ``scales_loss``)."""

from __future__ import annotations

import pytest
import torch
from tiny_models import TinyModule, loader

import fulmen
from fulmen.api import LaunchOwner, RunConfig
from fulmen.api.launcher import launch_owner


class Recorder(fulmen.Callback):
    def on_fit_start(self, trainer, module):
        self.seen = trainer.strategy.run_config


def test_the_trainer_hands_its_run_flags_to_the_strategy():
    recorder = Recorder()
    trainer = fulmen.Trainer(accelerator="cpu", max_steps=1, accumulate_grad_batches=3,
                             gradient_clip_val=0.5, callbacks=[recorder], logger=False,
                             enable_progress_bar=False, enable_checkpointing=False)
    assert trainer.strategy.run_config == RunConfig()  # Lite's default until a stage runs
    trainer.fit(TinyModule(), loader())
    assert recorder.seen == RunConfig("Trainer", accumulate_grad_batches=3,
                                      gradient_clip_val=0.5, gradient_clip_algorithm="norm")


def test_trainer_and_lite_are_launch_owners():
    trainer = fulmen.Trainer(accelerator="cpu", logger=False)
    lite = fulmen.Lite(accelerator="cpu")
    assert launch_owner(trainer.fit) is trainer and launch_owner(lite.launch) is lite
    assert launch_owner(print) is None and launch_owner(lambda: 0) is None
    assert LaunchOwner().worker_state() is None and lite.worker_state() is None


@pytest.mark.parametrize(("name", "param", "compute", "scales"), [
    ("32-true", None, None, False),
    ("64-true", torch.float64, torch.float64, False),
    ("16-true", torch.float16, torch.float16, False),
    ("bf16-true", torch.bfloat16, torch.bfloat16, False),
    ("16-mixed", None, torch.float16, True),
    ("bf16-mixed", None, torch.bfloat16, False),
])
def test_each_precision_states_its_dtypes_and_loss_scaling(name, param, compute, scales):
    precision = fulmen.Trainer(accelerator="cpu", precision=name, logger=False).precision_plugin
    assert (precision.param_dtype, precision.compute_dtype) == (param, compute)
    assert precision.scales_loss is scales and (precision.scaler is not None) is scales


def test_setting_the_same_module_up_twice_returns_what_the_first_call_made():
    strategy = fulmen.Trainer(accelerator="cpu", precision="bf16-true", logger=False).strategy
    module = torch.nn.Linear(2, 2)
    first = strategy.setup_module(module)
    assert strategy.is_set_up(module) and not strategy.is_set_up(torch.nn.Linear(2, 2))
    module.weight.data = module.weight.data.float()  # a second conversion would undo this
    assert strategy.setup_module(module) is first and module.weight.dtype == torch.float32
