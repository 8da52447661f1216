"""Lite's loop on 2 CPU processes started by fulmen (``--strategy ddp`` re-runs this script,
``ddp_spawn`` spawns workers): rank 1 sends itself SIGTERM after step ``--at``; every rank
writes the step its ``lite.should_stop()`` turned True at into ``<out>/rank<r>.json`` and saves
``<ckpt>/last.ckpt`` there; ``--resume`` loads it and trains to ``--steps``, writing the resume
record and the final weights. Exits as Lite makes it (143 after the notice)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch

import fulmen


def train(lite: fulmen.Lite, args: argparse.Namespace) -> Any:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    model, optimizer = lite.setup(model, torch.optim.SGD(model.parameters(), lr=0.05))
    last = (args.ckpt or args.out) / "last.ckpt"
    state: dict[str, Any] = {"model": model, "optimizer": optimizer, "step": 0}
    if args.resume:
        lite.load(last, state)
    facts: dict[str, Any] = {"start": state["step"]}
    for step in range(state["step"] + 1, args.steps + 1):
        x = torch.full((4, 4), float(step + lite.global_rank))
        optimizer.zero_grad()
        lite.backward(model(x).square().mean())
        optimizer.step()
        time.sleep(args.pace)
        if step == args.at and lite.global_rank == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        if lite.should_stop():
            facts["stopped"] = step
            (args.out / f"rank{lite.global_rank}.json").write_text(json.dumps(facts))
            state["step"] = step
            lite.save(last, state)
            return None
    resume = lite.preemption.resume
    facts["resume"] = None if resume is None else {
        "checkpoint_step": resume.checkpoint_step, "steps_redone": resume.steps_redone}
    facts["weights"] = model.weight.detach().flatten().tolist()
    (args.out / f"rank{lite.global_rank}.json").write_text(json.dumps(facts))
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--strategy", default="ddp_spawn")
    parser.add_argument("--at", type=int, default=0)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--pace", type=float, default=0.05)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--ckpt", type=Path, default=None, help="the checkpoint's folder")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lite = fulmen.Lite(accelerator="cpu", devices=2, strategy=args.strategy)
    lite.launch(train, args)


if __name__ == "__main__":
    main()
