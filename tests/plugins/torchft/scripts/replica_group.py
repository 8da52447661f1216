"""One replica group of a torchft job (one process), trained with Lite (``--api lite``) or the
Trainer (``--api trainer``) until the job has committed the number of steps in ``--steps-file``
(read every step; until it exists, training goes on, up to ``--max-steps``). The test starts
three, kills one and restarts it, and writes the file once the restarted group has rejoined, so
that every group stops after the same step.

Writes one JSON line per step to ``--log`` (``.rank<N>`` appended in a group of several
processes, ``--devices``; time, committed steps, groups in the quorum, whether
the step committed) and the final weights to ``--out``. The group's index and the job's size come
from torchft's environment variables (REPLICA_GROUP_ID, NUM_REPLICA_GROUPS); the lighthouse is
started by group 0 on TORCHFT_LIGHTHOUSE_PORT.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen_torchft import ReplicaSchedulers, StopAtCommittedSteps, TorchFTStrategy

parser = argparse.ArgumentParser()
parser.add_argument("--api", choices=("lite", "trainer"), default="lite")
parser.add_argument("--steps-file", required=True)
parser.add_argument("--max-steps", type=int, default=3000)
parser.add_argument("--log", required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--pace", type=float, default=0.0, help="seconds of sleep per step")
parser.add_argument("--devices", type=int, default=1, help="processes in the group (Lite)")
parser.add_argument("--quorum-timeout", type=float, default=30.0)
parser.add_argument("--heartbeat-timeout", type=float, default=1.0)
parser.add_argument("--join-timeout", type=float, default=1.0)
args = parser.parse_args()

torch.set_num_threads(1)
group = int(os.environ["REPLICA_GROUP_ID"])
files: dict[str, Any] = {}


def note(**fields: Any) -> None:
    if "log" not in files:  # opened on first use: in a group of several processes, per rank
        files["log"] = open(args.log + files.get("suffix", ""), "a")  # noqa: SIM115
    files["log"].write(json.dumps({"t": time.time(), **fields}) + "\n")
    files["log"].flush()


def target() -> int:
    try:
        with open(args.steps_file) as handle:
            return int(handle.read())
    except (OSError, ValueError):  # not written yet (or being written)
        return args.max_steps


def network() -> torch.nn.Module:
    torch.manual_seed(0)  # every group starts from the same weights (torchft syncs step 0 anyway)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def optimizer_for(module: torch.nn.Module) -> torch.optim.Optimizer:
    # momentum: the optimizer state must travel with the weights for the groups to stay equal
    return torch.optim.SGD(module.parameters(), lr=0.02, momentum=0.9)


def scheduler_for(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    # a rejoining group's scheduler must take its peer's count, or its learning rate differs
    return torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.9)


def stepped(strategy: TorchFTStrategy, commits_before: int, loss: float) -> None:
    note(event="step", committed=strategy.committed_steps, participants=strategy.participants,
         ok=strategy.commits > commits_before, loss=loss)
    if args.pace:
        time.sleep(args.pace)


strategy = TorchFTStrategy(timeout=15, quorum_timeout=args.quorum_timeout,
                           join_timeout=args.join_timeout,
                           heartbeat_timeout=args.heartbeat_timeout)

if args.api == "lite":
    lite = fulmen.Lite(accelerator="cpu", devices=args.devices, strategy=strategy)
    lite.launch()  # with devices > 1: the script runs once more per extra process
    if lite.world_size > 1:
        files["suffix"] = f".rank{lite.global_rank}"
    module = network()
    raw_optimizer = optimizer_for(module)
    scheduler = scheduler_for(raw_optimizer)
    strategy.register_replica_state("lr_scheduler", scheduler.state_dict,
                                    scheduler.load_state_dict)
    model, optimizer = lite.setup(module, raw_optimizer)
    data = torch.Generator().manual_seed(1000 + 10 * group + lite.global_rank)
    note(event="start", pid=os.getpid())
    while strategy.committed_steps < target():
        x = torch.randn(16, 8, generator=data)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        lite.backward(loss)
        before = strategy.commits
        optimizer.step()
        scheduler.step()
        stepped(strategy, before, loss.item())
else:
    class Regression(fulmen.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = network()

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            (x,) = batch
            return torch.nn.functional.mse_loss(self.net(x), x.sum(dim=1, keepdim=True))

        def configure_optimizers(self) -> Any:
            optimizer = optimizer_for(self)
            return {"optimizer": optimizer,
                    "lr_scheduler": {"scheduler": scheduler_for(optimizer), "interval": "step"}}

    class Report(StopAtCommittedSteps):
        """Notes every step, and stops at the steps the test names."""

        def target(self) -> int:
            return target()

        def on_train_start(self, trainer: Any, module: Any) -> None:
            note(event="start", pid=os.getpid())

        def on_train_batch_start(self, trainer: Any, *rest: Any) -> None:
            self.before = strategy.commits

        def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, *rest: Any
                               ) -> None:
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            stepped(strategy, self.before, float(loss))
            super().on_train_batch_end(trainer, module, outputs, *rest)

    dataset = TensorDataset(torch.randn(4096, 8, generator=torch.Generator().manual_seed(7)))
    trainer = fulmen.Trainer(accelerator="cpu", devices=1, strategy=strategy, max_epochs=-1,
                             max_steps=args.max_steps, callbacks=[Report(1), ReplicaSchedulers()],
                             logger=False,
                             enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
    trainer.fit(Regression(), DataLoader(dataset, batch_size=16, shuffle=True))

state = {k: v.detach().clone() for k, v in strategy.module_state_dict().items()}
torch.save(state, args.out + files.get("suffix", ""))
note(event="done", committed=strategy.committed_steps)
files["log"].close()
