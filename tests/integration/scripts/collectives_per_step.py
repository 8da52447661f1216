"""Counts the collectives a 2-process ``ddp`` run calls from Python in its steady state.

Every collective of ``torch.distributed`` (the module and ``distributed_c10d``, where the object
collectives call the tensor ones) is wrapped with a counter that counts while training is
between steps ``FIRST`` and ``LAST`` of the first epoch: a Trainer with the default callbacks
(checkpointing, a logger, the progress bar) that logs every step (``prog_bar=True``, an epoch
mean) and, on every second step, a value with ``sync_dist=True`` (the one collective asked for);
or a Lite loop. DDP's gradient all-reduce runs in its C++ reducer and is not counted. Writes
``<out>/rank<R>.json``: ``{"counts": {name: calls}, "steps": steps counted}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen

FIRST, LAST = 3, 13  # global steps: counting from the start of batch FIRST to the end of LAST-1
COUNTS: Counter[str] = Counter()
COUNTING = [False]
NAMES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast",
         "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather",
         "gather_object", "scatter", "scatter_object_list", "barrier", "monitored_barrier",
         "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv",
         "batch_isend_irecv")


def _counted(name: str, collective: Any) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        if COUNTING[0]:
            COUNTS[name] += 1
        return collective(*args, **kwargs)
    return counted


for _module in (dist, c10d):
    for _name in NAMES:
        if hasattr(_module, _name):
            setattr(_module, _name, _counted(_name, getattr(_module, _name)))


def data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())  # 16 batches of 2 per rank and epoch


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = net()
        self.counted = 0

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        COUNTING[0] = FIRST <= self.global_step < LAST

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("loss", loss, prog_bar=True)
        self.log("acc", (self.net(x).argmax(1) == y).float().mean(), on_epoch=True)
        if batch_idx % 2 == 0:
            self.log("synced", loss, sync_dist=True)
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.counted += COUNTING[0]
        COUNTING[0] = False

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Loop(fulmen.Lite):
    #: ask ``should_stop()`` at each step boundary (the notices' vote: not one per step)
    asks = False

    def run(self) -> tuple[int, float]:
        model = net()
        model, optimizer = self.setup(model, torch.optim.SGD(model.parameters(), lr=0.1))
        loader = self.setup_dataloaders(DataLoader(data(), batch_size=2, shuffle=True))
        counted, seconds = 0, 0.0
        for step, (x, y) in enumerate(loader):
            COUNTING[0] = FIRST <= step < LAST
            started = time.monotonic()
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            self.backward(loss)
            optimizer.step()
            if self.asks and self.should_stop():
                break
            counted += COUNTING[0]
            seconds += (time.monotonic() - started) * COUNTING[0]
            COUNTING[0] = False
        return counted, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("trainer", "lite", "lite_notices"), required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.mode == "trainer":
        trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=16,
                                 log_every_n_steps=5, default_root_dir=args.out,
                                 num_sanity_val_steps=0)
        model = Model()
        trainer.fit(model, DataLoader(data(), batch_size=2, shuffle=True))
        rank, steps = trainer.global_rank, model.counted
        seconds = 0.0
    else:
        lite = Loop(accelerator="cpu", devices=2, strategy="ddp")
        lite.asks = args.mode == "lite_notices"
        steps, seconds = lite.run()
        rank = lite.global_rank
    Path(args.out, f"rank{rank}.json").write_text(json.dumps(
        {"counts": dict(COUNTS), "steps": steps, "seconds": seconds}))


if __name__ == "__main__":
    main()
