"""Trainer under a DeepSpeed strategy on 2 CPU processes: fit (optionally resuming), save,
test; rank 0 writes its results to <out>/rank0.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tiny_models import Classifier as Model
from tiny_models import Indexed
from torch.utils.data import DataLoader

import fulmen
from fulmen.callbacks import ModelCheckpoint


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--strategy", default="deepspeed")
    parser.add_argument("--stage", type=int, default=None)
    parser.add_argument("--config", default=None, help="JSON text of a DeepSpeed config")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--resume-after", type=int, default=0,
                        help="stop after this many epochs, then resume in a new Trainer")
    parser.add_argument("--precision", default="32-true")
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--clip", type=float, default=None)
    parser.add_argument("--test", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    strategy: Any = args.strategy
    config = json.loads(args.config) if args.config else None
    if args.stage is not None or args.config:
        from fulmen_deepspeed import DeepSpeedStrategy

        strategy = DeepSpeedStrategy(stage=args.stage, config=config)
    def make_trainer(epochs: int) -> fulmen.Trainer:
        return fulmen.Trainer(
            accelerator="cpu", devices=2, strategy=strategy, max_epochs=epochs,
            precision=args.precision, accumulate_grad_batches=args.accumulate,
            gradient_clip_val=args.clip, enable_progress_bar=False, enable_model_summary=False,
            logger=False, num_sanity_val_steps=0, default_root_dir=str(out),
            callbacks=[ModelCheckpoint(dirpath=out / "ckpt", save_top_k=-1)])

    data = DataLoader(Indexed(32, with_index=False), batch_size=4)
    result: dict[str, Any] = {}
    if args.resume_after:  # a first run stops after some epochs; a second Trainer resumes
        first = make_trainer(args.resume_after)
        first.fit(Model(), data)
        resume: str | None = str(out / "ckpt" / sorted((out / "ckpt").iterdir())[-1].name)
        result["resumed_from"] = Path(str(resume)).name
        if args.stage is not None or args.config:
            strategy = DeepSpeedStrategy(stage=args.stage, config=config)
    else:
        resume = None
    trainer = make_trainer(args.epochs)
    model = Model()
    trainer.fit(model, data, ckpt_path=resume)
    result.update({"weights": {k: v.float().flatten().tolist()
                               for k, v in trainer.strategy.module_state_dict().items()},
                   "global_step": trainer.global_step,
                   "checkpoints": sorted(p.name for p in (out / "ckpt").iterdir())})
    if args.test:  # a fresh Trainer (no engine state) tests the last checkpoint directory
        last = out / "ckpt" / sorted((out / "ckpt").iterdir())[-1].name
        tester = fulmen.Trainer(accelerator="cpu", devices=2, strategy=args.strategy,
                                precision=args.precision, logger=False,
                                enable_progress_bar=False, enable_model_summary=False)
        test_data = DataLoader(Indexed(16, with_index=False), batch_size=4)
        result["test"] = tester.test(Model(), test_data, ckpt_path=last, verbose=False)
    if trainer.is_global_zero:
        (out / "rank0.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
