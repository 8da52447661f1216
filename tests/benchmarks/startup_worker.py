"""Worker for startup.py: a short DDP job on digits that timestamps every phase on every rank.

Each rank appends one JSON line to ``$FULMEN_BENCH_OUT``: seconds since the command started
(``FULMEN_BENCH_T0``) at each mark it passed. Marks: ``interpreter`` (this file starts running),
``imports`` (torch, fulmen, data libraries imported), ``composed`` (Trainer/Lite built: plugin
discovery and composition), ``launched`` (fit/launch called), ``group`` (process group joined,
module set up: ``on_fit_start`` / after ``setup``), ``first_batch`` (first batch in hand),
``first_step`` (first optimizer step done), ``last_step``, ``finished`` (fit/run returned) and
``exit`` (interpreter exit, after teardown).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time

MARKS: dict[str, float] = {}


def mark(name: str) -> None:
    MARKS.setdefault(name, time.time() - float(os.environ["FULMEN_BENCH_T0"]))


mark("interpreter")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

import fulmen  # noqa: E402

STEPS, BATCH = 100, 32
mark("imports")


def rank() -> str:
    """``main`` for a process that started others without being a rank itself (ddp_spawn)."""
    return os.environ.get("RANK", "main")


@atexit.register
def _write() -> None:
    mark("exit")
    with open(os.environ["FULMEN_BENCH_OUT"], "a") as out:
        out.write(json.dumps({"rank": rank(), **MARKS}) + "\n")


def digits() -> TensorDataset:
    x, y = load_digits(return_X_y=True)
    return TensorDataset(torch.tensor(x, dtype=torch.float32) / 16.0, torch.tensor(y))


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


def plain() -> None:
    import torch.distributed as dist

    mark("composed")
    mark("launched")
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(net())
    mark("group")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = digits()
    loader = DataLoader(data, batch_size=BATCH, sampler=DistributedSampler(data, shuffle=True))
    for step, (x, y) in enumerate(loader):
        mark("first_batch")
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        mark("first_step")
        if step + 1 == STEPS or step + 1 == len(loader):
            mark("last_step")
            break
    mark("finished")
    dist.destroy_process_group()


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = net()

    def training_step(self, batch, batch_idx):
        mark("first_batch")
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def on_fit_start(self) -> None:
        mark("group")

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:
        mark("first_step")

    def on_train_end(self) -> None:
        mark("last_step")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def trainer(strategy: str) -> None:
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_epochs=1,
                             limit_train_batches=STEPS, enable_progress_bar=False,
                             enable_model_summary=False, logger=False,
                             enable_checkpointing=False, num_sanity_val_steps=0)
    mark("composed")
    mark("launched")
    trainer.fit(Model(), DataLoader(digits(), batch_size=BATCH, shuffle=True))
    mark("finished")


def lite_run(lite: fulmen.Lite) -> None:
    model = net()
    model, optimizer = lite.setup(model, torch.optim.Adam(model.parameters(), lr=1e-3))
    loader = lite.setup_dataloaders(DataLoader(digits(), batch_size=BATCH, shuffle=True))
    mark("group")
    for step, (x, y) in enumerate(loader):
        mark("first_batch")
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        lite.backward(loss)
        optimizer.step()
        mark("first_step")
        if step + 1 == STEPS or step + 1 == len(loader):
            mark("last_step")
            break


def lite() -> None:
    runner = fulmen.Lite(accelerator="cpu", devices=2, strategy="ddp")
    mark("composed")
    mark("launched")
    runner.launch(lite_run)
    mark("finished")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "plain":
        plain()
    elif mode == "lite":
        lite()
    else:
        trainer(mode)
