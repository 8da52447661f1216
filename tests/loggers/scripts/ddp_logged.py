"""Train under ddp (2 processes, gloo) with one tracker; optionally resume from a checkpoint.

``python ddp_logged.py LOGGER OUT [--tracking-uri URI] [--resume CKPT] [--steps N] [--by-name]``.
Each rank writes ``OUT/rank<N>.json`` with what its logger says (version) so the test can
compare; with ``--by-name`` the Trainer gets the registered name (``logger="wandb"``) and rank 0
adds the run as the logger reads it back.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

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
    parser.add_argument("--by-name", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logger: Any = args.logger if args.by_name else make_logger(args.logger, args.out,
                                                               args.tracking_uri)
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=logger,
                             max_steps=args.steps, log_every_n_steps=1,
                             enable_progress_bar=False, enable_model_summary=False,
                             enable_checkpointing=False, num_sanity_val_steps=0,
                             default_root_dir=str(args.out))
    trainer.fit(module(), ckpt_path=args.resume, weights_only=False)
    trainer.save_checkpoint(args.out / f"after-{args.steps}.ckpt")
    rank, logger = trainer.global_rank, trainer.logger
    facts: dict[str, Any] = {"version": logger.version, "pid": os.getpid(),
                             "world_size": trainer.world_size}
    if args.by_name and rank == 0:
        run = logger.read_run()
        facts.update(runs=run.runs, params=sorted(run.params),
                     steps=[s for s, _ in run.metrics["train_loss"]], status=run.status)
    (args.out / f"rank{rank}.json").write_text(json.dumps(facts))


if __name__ == "__main__":
    main()
