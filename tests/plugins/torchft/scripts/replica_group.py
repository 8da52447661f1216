"""One replica group of a torchft job (one process), trained with Lite until the job has
committed the number of steps in ``--steps-file`` (read every step; until it exists, training
goes on, up to ``--max-steps``); the test starts three, kills one and restarts it, and writes
the file once the restarted group has rejoined, so that every group stops at the same step.

Writes one JSON line per step to ``--log`` (time, committed steps, groups in the quorum, whether
the step committed) and the final weights to ``--out``. The group's index and the job's size come
from torchft's environment variables (REPLICA_GROUP_ID, NUM_REPLICA_GROUPS); the lighthouse is
started by group 0 on TORCHFT_LIGHTHOUSE_PORT.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

import fulmen
from fulmen_torchft import TorchFTStrategy

parser = argparse.ArgumentParser()
parser.add_argument("--steps-file", required=True)
parser.add_argument("--max-steps", type=int, default=3000)
parser.add_argument("--log", required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--pace", type=float, default=0.0, help="seconds of sleep per step")
parser.add_argument("--heartbeat-timeout", type=float, default=1.0)
args = parser.parse_args()

torch.set_num_threads(1)
group = int(os.environ["REPLICA_GROUP_ID"])
strategy = TorchFTStrategy(timeout=15, quorum_timeout=30, join_timeout=1.0,
                           heartbeat_timeout=args.heartbeat_timeout)
lite = fulmen.Lite(accelerator="cpu", devices=1, strategy=strategy)
lite.launch()

torch.manual_seed(0)  # every group starts from the same weights (torchft syncs step 0 anyway)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
# momentum: the optimizer state must travel with the weights for the groups to stay equal
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
model, optimizer = lite.setup(model, optimizer)
data = torch.Generator().manual_seed(1000 + group)
started = time.time()


def target() -> int:
    try:
        with open(args.steps_file) as handle:
            return int(handle.read())
    except (OSError, ValueError):  # not written yet (or being written)
        return args.max_steps


with open(args.log, "a") as log:
    log.write(json.dumps({"event": "start", "t": started, "pid": os.getpid()}) + "\n")
    log.flush()
    while strategy.committed_steps < target():
        x = torch.randn(16, 8, generator=data)
        y = x.sum(dim=1, keepdim=True)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        lite.backward(loss)
        before = strategy.commits
        optimizer.step()
        log.write(json.dumps({"event": "step", "t": time.time(),
                              "committed": strategy.committed_steps,
                              "participants": strategy.participants,
                              "ok": strategy.commits > before, "loss": loss.item()}) + "\n")
        log.flush()
        if args.pace:
            time.sleep(args.pace)

state = {k: v.detach().clone() for k, v in strategy.module_state_dict().items()}
torch.save(state, args.out)
with open(args.log, "a") as log:
    log.write(json.dumps({"event": "done", "t": time.time(),
                          "committed": strategy.committed_steps}) + "\n")
