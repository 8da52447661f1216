"""Precision plugins inside the loops: dtypes, autocast, loss scaling."""

from __future__ import annotations

from typing import Any

import torch
from tiny_models import TinyModule, lean, loader

import fulmen


class DtypeSpy(TinyModule):
    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, Any] = {}

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        out = self(x)
        self.seen.update(input=x.dtype, weight=self.net[0].weight.dtype, output=out.dtype,
                         created=torch.zeros(1).dtype)
        return torch.nn.functional.cross_entropy(out.float(), y)


def fit(precision: str) -> dict[str, Any]:
    model = DtypeSpy()
    fulmen.Trainer(**lean(max_epochs=1, precision=precision)).fit(model, loader(n=16))
    return model.seen


def test_32_true():
    assert fit("32-true") == {"input": torch.float32, "weight": torch.float32,
                              "output": torch.float32, "created": torch.float32}


def test_64_true_converts_parameters_inputs_and_created_tensors():
    assert fit("64-true") == {"input": torch.float64, "weight": torch.float64,
                              "output": torch.float64, "created": torch.float64}


def test_bf16_mixed_autocasts_with_float32_weights():
    seen = fit("bf16-mixed")
    assert (seen["weight"], seen["output"], seen["input"]) == (torch.float32, torch.bfloat16,
                                                                torch.float32)


def test_bf16_true_keeps_everything_in_bfloat16():
    seen = fit("bf16-true")
    assert seen["weight"] == seen["input"] == seen["output"] == torch.bfloat16


def test_16_mixed_skips_overflowing_steps_and_backs_off_the_scale():
    class Overflows(TinyModule):
        def on_after_backward(self) -> None:
            if self.global_step == 1:
                self.net[0].weight.grad.fill_(float("inf"))

        def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
            if batch_idx == 1:
                self.before = self.net[0].weight.detach().clone()

        def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
            if batch_idx == 1:
                self.after = self.net[0].weight.detach().clone()

    model = Overflows()
    trainer = fulmen.Trainer(**lean(max_epochs=1, precision="16-mixed"))
    trainer.fit(model, loader(n=32))
    scaler = trainer.precision_plugin.scaler
    assert torch.equal(model.before, model.after)  # the overflowing step was skipped
    assert scaler.get_scale() < 65536.0
    assert "scaler" in trainer.precision_plugin.state_dict()
