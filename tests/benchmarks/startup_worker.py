"""Worker for startup.py: one 2-process DDP job on digits that timestamps its phases on every rank.

Modes: ``plain`` (PyTorch DDP, run under torchrun), ``ddp`` and ``ddp_spawn`` (fulmen's
Trainer), ``lite`` (a Lite loop under ``ddp``), and ``lightning`` / ``fabric`` (the same with
Lightning's Trainer and Fabric, when the ``lightning`` package is installed). Every mode trains
the same MLP with Adam for ``STEPS`` optimizer steps of ``BATCH`` samples per rank and leaves
thread counts to the framework (torchrun sets one thread per process).

Each process appends one JSON line to ``$FULMEN_BENCH_OUT`` at exit: its rank (``main`` for a
process that started ranks without training, as under ``ddp_spawn``), seconds since the command
started (``FULMEN_BENCH_T0``) at each mark it passed, samples/s over the steps after ``WARMUP``
(all ranks together), the CPU time per step over those steps (the main thread's, and every
thread's by name), how the main thread spent a step's wall time (on a CPU, waiting for one,
blocked: from ``/proc``'s schedstat), and its peak resident memory in MB. Marks:
``interpreter`` (this file starts running), ``imports`` (torch, the framework and scikit-learn
imported), ``composed`` (Trainer/Lite/Fabric built), ``launched`` (fit/launch called),
``group`` (process group joined and the model wrapped), ``first_batch``, ``first_step``
(first optimizer step done), ``last_step``, ``finished`` (fit/launch returned) and ``exit``
(exit handlers, after teardown).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import resource
import sys
import threading
import time
from typing import Any

MARKS: dict[str, float] = {}
RATE: dict[str, Any] = {}  # samples/s and CPU times of the timed steps
GC: dict[str, list[int]] = {}  # garbage collections per generation during the timed steps
STEPS, WARMUP, BATCH = 2000, 50, 32


def mark(name: str) -> None:
    MARKS.setdefault(name, time.time() - float(os.environ["FULMEN_BENCH_T0"]))


mark("interpreter")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

MODE = sys.argv[1] if __name__ in ("__main__", "__mp_main__") else ""
if MODE in ("lightning", "fabric"):
    import lightning  # noqa: F401
else:
    import fulmen
mark("imports")


@atexit.register
def _write() -> None:
    mark("exit")
    # Lightning's launcher sets LOCAL_RANK in its children only: a process that trained and has
    # neither variable is rank 0; one that did not train started the ranks (ddp_spawn's main).
    rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK",
                                                 "0" if "first_step" in MARKS else "main"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    with open(os.environ["FULMEN_BENCH_OUT"], "a") as out:
        out.write(json.dumps({"rank": rank, "marks": MARKS, "peak_mb": peak_mb, **RATE,
                              **GC}) + "\n")


def _schedstat() -> list[int]:
    """The calling thread's nanoseconds on a CPU and waiting for one (Linux; else zeros)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return [int(v) for v in f.read().split()[:2]]
    except OSError:
        return [0, 0]


def _task_ticks() -> dict[str, int]:
    """CPU ticks (user + system) of each thread of this process, by ``name:id`` (Linux)."""
    out: dict[str, int] = {}
    if not os.path.isdir("/proc/self/task"):
        return out
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)
        name = fields[0].split("(", 1)[1] + ":" + tid
        rest = fields[1].split()
        out[name] = int(rest[11]) + int(rest[12])
    return out


class Clock:
    """Marks the first and last step; samples/s of all ranks between WARMUP and STEPS."""

    def __init__(self) -> None:
        self.step = 0
        self.start = 0.0
        self.cpu = 0.0
        self.tasks: dict[str, int] = {}
        self.sched = [0, 0]

    def tick(self, world: int) -> bool:
        """Count one optimizer step; True after the last."""
        self.step += 1
        mark("first_step")
        if self.step == WARMUP:
            GC["gc"] = [g["collections"] for g in gc.get_stats()]
            self.cpu = time.thread_time()
            self.tasks = _task_ticks()
            self.sched = _schedstat()
            self.start = time.perf_counter()
        if self.step == STEPS:
            GC["gc"] = [g["collections"] - n for g, n in zip(gc.get_stats(), GC["gc"])]
            elapsed = time.perf_counter() - self.start
            RATE["samples_per_s"] = (STEPS - WARMUP) * BATCH * world / elapsed
            # the main thread's step: on a CPU, runnable but waiting for one, and the rest
            # (blocked: mostly waiting for the gradients' all-reduce)
            run, queued = (b - a for a, b in zip(self.sched, _schedstat()))
            RATE["step_us"] = {"wall": elapsed / (STEPS - WARMUP) * 1e6,
                               "running": run / 1e3 / (STEPS - WARMUP),
                               "queued": queued / 1e3 / (STEPS - WARMUP)}
            # CPU time per step: the main thread, and every thread (name:id) from /proc
            RATE["main_us"] = (time.thread_time() - self.cpu) / (STEPS - WARMUP) * 1e6
            now = _task_ticks()
            RATE["task_us"] = {k: (v - self.tasks.get(k, 0)) * 1e6 / os.sysconf("SC_CLK_TCK")
                               / (STEPS - WARMUP) for k, v in now.items()}
            mark("last_step")
        return self.step >= STEPS


def digits() -> TensorDataset:
    x, y = load_digits(return_X_y=True)
    return TensorDataset(torch.tensor(x, dtype=torch.float32) / 16.0, torch.tensor(y))


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def loop(model: Any, optimizer: Any, loader: Any, backward: Any, world: int,
         set_epoch: Any = None) -> None:
    """The raw training loop, shared by plain DDP, Lite and Fabric."""
    clock, epoch = Clock(), 0
    while True:
        if set_epoch is not None:
            set_epoch(epoch)
        for x, y in loader:
            mark("first_batch")
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            backward(loss)
            optimizer.step()
            if clock.tick(world):
                return
        epoch += 1


def plain() -> None:
    import torch.distributed as dist

    mark("composed")
    mark("launched")
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(net())
    mark("group")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = digits()
    sampler: DistributedSampler[Any] = DistributedSampler(data, shuffle=True)
    loader = DataLoader(data, batch_size=BATCH, sampler=sampler)
    loop(model, optimizer, loader, lambda loss: loss.backward(), dist.get_world_size(),
         sampler.set_epoch)
    mark("finished")
    dist.destroy_process_group()


if MODE == "lightning":
    from lightning import LightningModule as ModuleBase
else:
    from fulmen import Module as ModuleBase


class Model(ModuleBase):  # at module level: ddp_spawn pickles it
    """The same training step for fulmen's Trainer and Lightning's."""

    def __init__(self) -> None:
        super().__init__()
        self.net = net()
        self.clock = Clock()
        self.world = 1

    def on_fit_start(self) -> None:
        mark("group")
        self.world = self.trainer.world_size  # read once, as the plain loop does

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        mark("first_batch")
        # the clock ticks here for the step before, so that the module overrides no batch
        # hook (few modules do; one would cost a hook call per batch): the fit runs one step
        # past the timed ones, and "first_step" is marked after the second batch is loaded
        if self.trainer.global_step and self.clock.tick(self.world):
            self.trainer.should_stop = True
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def with_trainer(trainer_class: type, strategy: str) -> None:
    trainer = trainer_class(accelerator="cpu", devices=2, strategy=strategy, max_epochs=-1,
                            max_steps=STEPS + 1, enable_progress_bar=False,
                            enable_model_summary=False, logger=False,
                            enable_checkpointing=False, num_sanity_val_steps=0)
    mark("composed")
    mark("launched")
    trainer.fit(Model(), DataLoader(digits(), batch_size=BATCH, shuffle=True))
    mark("finished")


def lite_loop(runner: Any) -> None:
    """Lite and Fabric share their calls: setup, setup_dataloaders, backward."""
    model = net()
    model, optimizer = runner.setup(model, torch.optim.Adam(model.parameters(), lr=1e-3))
    loader = runner.setup_dataloaders(DataLoader(digits(), batch_size=BATCH, shuffle=True))
    mark("group")
    loop(model, optimizer, loader, runner.backward, runner.world_size)


def with_lite(runner: Any) -> None:
    mark("composed")
    mark("launched")
    runner.launch(lite_loop)
    mark("finished")


if __name__ == "__main__":
    if MODE == "plain":
        plain()
    elif MODE == "lite":
        with_lite(fulmen.Lite(accelerator="cpu", devices=2, strategy="ddp"))
    elif MODE == "lightning":
        from lightning import Trainer

        with_trainer(Trainer, "ddp")
    elif MODE == "fabric":
        from lightning import Fabric

        with_lite(Fabric(accelerator="cpu", devices=2, strategy="ddp"))
    else:
        with_trainer(fulmen.Trainer, MODE)
