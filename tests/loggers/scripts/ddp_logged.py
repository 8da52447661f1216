"""Train under ddp (2 processes, gloo) with one tracker; optionally resume from a checkpoint.

``python ddp_logged.py LOGGER OUT [--tracking-uri URI] [--resume CKPT] [--steps N]``. Each rank
writes ``OUT/rank<N>.json`` with what its logger says (version) so the test can compare.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

import fulmen
from fulmen.testing.logger_checks import module


def make_logger(name: str, out: Path, tracking_uri: str | None) -> fulmen.api.Logger:
    from fulmen import loggers

    if name == "wandb":
        return loggers.WandbLogger(save_dir=str(out), offline=True, project="ddp")
    if name == "mlflow":
        return loggers.MLFlowLogger(tracking_uri=tracking_uri, experiment_name="ddp")
    if name == "comet":
        return loggers.CometLogger(online=False, offline_directory=str(out / "comet"),
                                   project="ddp", log_code=False, log_env_details=False,
                                   log_git_metadata=False, log_git_patch=False)
    return loggers.CSVLogger(str(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("logger")
    parser.add_argument("out", type=Path)
    parser.add_argument("--tracking-uri")
    parser.add_argument("--resume")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logger = make_logger(args.logger, args.out, args.tracking_uri)
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=logger,
                             max_steps=args.steps, log_every_n_steps=1,
                             enable_progress_bar=False, enable_model_summary=False,
                             enable_checkpointing=False, num_sanity_val_steps=0,
                             default_root_dir=str(args.out))
    trainer.fit(module(), ckpt_path=args.resume, weights_only=False)
    trainer.save_checkpoint(args.out / f"after-{args.steps}.ckpt")
    rank = trainer.global_rank
    (args.out / f"rank{rank}.json").write_text(json.dumps(
        {"version": logger.version, "pid": os.getpid(), "world_size": trainer.world_size}))


if __name__ == "__main__":
    main()
