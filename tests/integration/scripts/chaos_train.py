"""A job that chaos tests interrupt: run under ``torchrun --max-restarts=N``, it trains with the
Trainer (``--strategy ddp|fsdp``) or with Lite's own loop (``--strategy lite``), checkpoints every
``--every`` steps, and always resumes with ``ckpt_path="last"`` (Lite: ``last.ckpt``, which a
notice also writes).

``--step-seconds`` makes each step last at least that long (a real step's pace: the ranks vote
on notices every half second, so a run of a fraction of a second would end before they agree).

``--plan`` is a JSON list of ``[attempt, rank, step, "KILL" | "TERM"]``: on restart ``attempt``
(``TORCHELASTIC_RESTART_COUNT``), rank ``rank`` sends itself that signal right after optimizer
step ``step``. Rank zero appends to ``<out>/events.jsonl`` what each attempt did (the step it
started from, each kill, the lost work fulmen measured) and saves the final weights into
``<out>/final.ckpt``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import fulmen
from fulmen.callbacks import ModelCheckpoint


class Noisy(Dataset):
    """96 seeded samples with noise drawn at load time (the data's random state matters)."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(96, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        return self.x[i] + 0.1 * torch.randn(8), self.y[i]


def network() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                               torch.nn.Linear(16, 2))


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = network()

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.02)


def attempt() -> int:
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


class Events:
    def __init__(self, out: Path, rank: int) -> None:
        self.path, self.rank = out / "events.jsonl", rank

    def add(self, kind: str, everyone: bool = False, **facts: Any) -> None:
        if self.rank == 0 or everyone:
            with open(self.path, "a") as handle:
                handle.write(json.dumps({"kind": kind, "attempt": attempt(), "rank": self.rank,
                                         "time": time.time(), **facts}) + "\n")
                handle.flush()
                os.fsync(handle.fileno())


def chaos(plan: list[list[Any]], events: Events, rank: int, step: int, pace: float) -> None:
    time.sleep(pace)
    for when, who, at, how in plan:
        if (when, who, at) == (attempt(), rank, step):
            events.add("signal", everyone=True, step=step, signal=how)
            os.kill(os.getpid(), signal.SIGKILL if how == "KILL" else signal.SIGTERM)


class Chaos(fulmen.Callback):
    def __init__(self, plan: list[list[Any]], out: Path, pace: float) -> None:
        self.plan, self.out, self.pace = plan, out, pace
        self.events: Events | None = None

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self.events = Events(self.out, trainer.global_rank)
        resume = trainer.run_state.preemption.ledger.resume
        self.events.add("start", step=trainer.global_step, world_size=trainer.world_size,
                        ckpt=trainer.ckpt_path)
        self.resume = resume

    def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
        assert self.events is not None
        if self.resume is not None and self.resume.first_step_at is not None:
            record, self.resume = self.resume, None
            self.events.add("resumed", checkpoint_step=record.checkpoint_step,
                            failed_step=record.failed_step, steps_redone=record.steps_redone,
                            seconds_redone=record.seconds_redone,
                            recovery_seconds=record.recovery_seconds,
                            preemption=record.preemption)
        chaos(self.plan, self.events, trainer.global_rank, trainer.global_step, self.pace)


def run_trainer(args: argparse.Namespace, plan: list[list[Any]]) -> None:
    fulmen.seed_everything(7)
    trainer = fulmen.Trainer(
        accelerator="cpu", devices=args.devices, strategy=args.strategy, max_steps=args.steps,
        default_root_dir=args.out, logger=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0,
        callbacks=[ModelCheckpoint(dirpath=args.out / "ckpt", every_n_train_steps=args.every,
                                   save_last=True), Chaos(plan, args.out, args.step_seconds)])
    trainer.fit(Model(), DataLoader(Noisy(), batch_size=8, shuffle=True), ckpt_path="last")
    trainer.save_checkpoint(args.out / "final.ckpt", weights_only=True)
    Events(args.out, trainer.global_rank).add("done", step=trainer.global_step)


def run_lite(args: argparse.Namespace, plan: list[list[Any]]) -> None:
    lite = fulmen.Lite(accelerator="cpu", devices=args.devices, strategy="ddp")
    lite.launch(lite_loop, args, plan)


def lite_loop(lite: fulmen.Lite, args: argparse.Namespace, plan: list[list[Any]]) -> None:
    """Raw PyTorch with Lite: the loop saves ``last.ckpt`` every ``--every`` steps (atomically),
    asks ``lite.should_stop(step)`` after each step (a notice: save ``last.ckpt`` there and
    return; the launch exits 143, so torchrun restarts the job), and resumes from it, skipping
    the batches of the epoch it had done."""
    lite.seed_everything(7)
    model = network()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    model, optimizer = lite.setup(model, optimizer)
    data = Noisy()

    def epoch_loader(epoch: int) -> Any:
        """This rank's share of the epoch's shuffled order: the loop, not the loader, decides
        where an epoch starts (Lite's loader numbers the passes it made in this process)."""
        order = torch.randperm(len(data), generator=torch.Generator().manual_seed(epoch))
        share = order[lite.global_rank::lite.world_size].tolist()
        return lite.setup_dataloaders(DataLoader(data, batch_size=8, sampler=share),
                                      use_distributed_sampler=False)

    events = Events(args.out, lite.global_rank)
    last = args.out / "ckpt" / "last.ckpt"
    state: dict[str, Any] = {"model": model, "optimizer": optimizer, "step": 0}
    if last.exists():
        lite.load(last, state)
    step = state["step"]
    assert lite.preemption.global_step == step  # the step count goes on from the checkpoint
    resume = lite.preemption.resume
    events.add("start", step=step, world_size=lite.world_size, ckpt=str(last))
    per_epoch = len(epoch_loader(0))
    while step < args.steps:
        epoch, done = divmod(step, per_epoch)
        loader = epoch_loader(epoch)

        def reseed(index: int, epoch: int = epoch) -> None:
            """Before each batch is drawn: its noise and dropout do not depend on where the
            run started."""
            torch.manual_seed(100_000 * epoch + 100 * index + lite.global_rank)

        reseed(0)
        for index, (x, y) in enumerate(loader):
            if index < done:
                reseed(index + 1)
                continue
            optimizer.zero_grad()
            lite.backward(F.cross_entropy(model(x), y))
            optimizer.step()
            step += 1
            if lite.should_stop(step):  # the step boundary comes first: saves record its step
                events.add("stopping", everyone=True, step=step)
                state["step"] = step
                lite.save(last, state)  # the preemption checkpoint
                return  # lite.launch exits with the scheduler's convention (143)
            if step % args.every == 0:
                state["step"] = step
                lite.save(last, state)
            chaos(plan, events, lite.global_rank, step, args.step_seconds)
            if resume is not None and resume.first_step_at is not None:
                events.add("resumed", checkpoint_step=resume.checkpoint_step,
                           failed_step=resume.failed_step, steps_redone=resume.steps_redone,
                           seconds_redone=resume.seconds_redone,
                           recovery_seconds=resume.recovery_seconds,
                           preemption=resume.preemption)
                resume = None
            if step >= args.steps:
                break
            reseed(index + 1)
    lite.save(args.out / "final.ckpt", {"model": model})
    events.add("done", step=step)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--plan", default="[]")
    parser.add_argument("--step-seconds", type=float, default=0.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    plan = json.loads(args.plan)
    (args.out / "ckpt").mkdir(parents=True, exist_ok=True)
    if args.strategy == "lite":
        run_lite(args, plan)
    else:
        run_trainer(args, plan)


if __name__ == "__main__":
    main()
