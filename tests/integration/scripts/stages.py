"""One Trainer, every stage on the same module: fit, validate, test, predict, then fit again.

The strategy sets the module up once: the object steps go through (``strategy.model``) stays
the same across stages, and FSDP shards the module once. Writes ``<out>/rank<R>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader
from train import Indexed, Model

import fulmen
from fulmen_strategies import FSDPStrategy


class Stages(fulmen.Callback):
    """Records, per stage, which object the steps go through and how often FSDP sharded."""

    def __init__(self) -> None:
        self.models: list[int] = []
        self.stages: list[str] = []

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self.stages.append(stage)

    def _seen(self, trainer: Any) -> None:
        self.models.append(id(trainer.strategy.model))

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._seen(trainer)

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        if trainer.state.fn == "validate":  # not the validation inside fit
            self._seen(trainer)

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._seen(trainer)

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self._seen(trainer)


class Predicting(Model):
    def predict_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self(batch[0]).argmax(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--out", required=True)
    parser.add_argument("--straight", action="store_true", help="one fit of two epochs only")
    parser.add_argument("--compile", action="store_true",
                        help="Trainer(compile=...) with the aot_eager backend (no C++ build)")
    args = parser.parse_args()
    out = Path(args.out)
    strategy: Any = args.strategy
    if strategy == "fsdp":
        strategy = FSDPStrategy(auto_wrap_policy={torch.nn.Linear})
    stages = Stages()
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_epochs=1,
                             enable_progress_bar=False, enable_model_summary=False, logger=False,
                             enable_checkpointing=False, num_sanity_val_steps=0,
                             callbacks=[stages], default_root_dir=str(out),
                             compile={"backend": "aot_eager"} if args.compile else False)
    model = Predicting()
    data = DataLoader(Indexed(32), batch_size=4)
    if args.straight:
        trainer.max_epochs = 2
        trainer.fit(model, data, data)
        full = trainer.strategy.module_state_dict()
        (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({"weights": {
            k: v.flatten().tolist() for k, v in full.items()}}))
        return
    trainer.fit(model, data, data)
    trainer.validate(model, data, verbose=False)
    trainer.test(model, data, verbose=False)
    predictions = trainer.predict(model, data)
    first_fit_steps = trainer.global_step
    trainer.max_epochs = 2
    trainer.fit(model, data, data)
    classes = sorted({type(m).__name__ for m in model.modules()})
    full = trainer.strategy.module_state_dict()
    weights = {k: (v.full_tensor() if isinstance(v, torch.distributed.tensor.DTensor) else v)
               .flatten().tolist() for k, v in full.items()}
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({
        "stages": stages.stages, "models": stages.models, "classes": classes,
        "steps": [first_fit_steps, trainer.global_step], "predictions": len(predictions or []),
        "weights": weights}))


if __name__ == "__main__":
    main()
