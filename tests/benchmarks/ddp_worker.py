"""Worker for ddp.py: one training run, plain torch DDP (under torchrun) or fulmen.

Prints one JSON line from rank 0: samples per second after warm-up, seconds from the command's
start (FULMEN_BENCH_T0) to the first step, and per-rank bytes of parameters + optimizer state.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import fulmen

WARMUP, STEPS, BATCH = 50, 1200, 32
torch.set_num_threads(1)  # at import, so spawned workers (which import this file) get it too


def digits() -> TensorDataset:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return TensorDataset(torch.tensor(x, dtype=torch.float32) / 16.0, torch.tensor(y))


def net(wide: bool) -> torch.nn.Module:
    hidden = 1024 if wide else 128
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def state_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    def local(t: torch.Tensor) -> torch.Tensor:
        return t.to_local() if hasattr(t, "to_local") else t

    total = sum(local(p).numel() * p.element_size() for p in model.parameters())
    for state in optimizer.state.values():
        total += sum(local(v).numel() * v.element_size() for v in state.values()
                     if isinstance(v, torch.Tensor) and v.ndim > 0)
    return total


class Clock:
    def __init__(self) -> None:
        self.first = self.start = 0.0
        self.step = 0

    def tick(self) -> None:
        self.step += 1
        now = time.perf_counter()
        if self.step == 1:
            self.first = time.time() - float(os.environ["FULMEN_BENCH_T0"])
        if self.step == WARMUP:
            self.start = now
        if self.step == WARMUP + STEPS:
            self.seconds = now - self.start

    def report(self, rank: int, world: int, extra: dict[str, Any]) -> None:
        if rank == 0:
            print(json.dumps({"samples_per_s": STEPS * BATCH * world / self.seconds,
                              "first_step_s": self.first, **extra}), flush=True)


def plain() -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(net(False))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = digits()
    loader = DataLoader(data, batch_size=BATCH, sampler=DistributedSampler(data, shuffle=True))
    clock, epoch = Clock(), 0
    while clock.step < WARMUP + STEPS:
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            clock.tick()
            if clock.step == WARMUP + STEPS:
                break
        epoch += 1
    clock.report(rank, world, {})
    dist.barrier()  # tearing gloo down right after a collective aborts now and then (torch 2.13)
    dist.destroy_process_group()


CLOCK = Clock()


class Model(fulmen.Module):
    def __init__(self, wide: bool) -> None:
        super().__init__()
        self.net = net(wide)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        CLOCK.tick()
        if CLOCK.step == WARMUP + STEPS:
            self.trainer.should_stop = True
            CLOCK.report(self.trainer.global_rank, self.trainer.world_size,
                         {"state_bytes": state_bytes(self, self.trainer.optimizers[0])})

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def with_fulmen(strategy: str, wide: bool) -> None:
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_epochs=-1,
                             enable_progress_bar=False, enable_model_summary=False, logger=False,
                             enable_checkpointing=False, num_sanity_val_steps=0)
    trainer.fit(Model(wide), DataLoader(digits(), batch_size=BATCH, shuffle=True))


class BenchLite(fulmen.Lite):
    def run(self) -> None:
        torch.manual_seed(0)
        model = net(False)
        model, optimizer = self.setup(model, torch.optim.Adam(model.parameters(), lr=1e-3))
        loader = self.setup_dataloaders(DataLoader(digits(), batch_size=BATCH, shuffle=True))
        clock = Clock()
        while clock.step < WARMUP + STEPS:
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                self.backward(loss)
                optimizer.step()
                clock.tick()
                if clock.step == WARMUP + STEPS:
                    break
        clock.report(self.global_rank, self.world_size, {})


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "plain":
        plain()
    elif mode == "lite":
        BenchLite(accelerator="cpu", devices=2, strategy="ddp").run()
    else:
        with_fulmen(mode, wide=len(sys.argv) > 2 and sys.argv[2] == "wide")
