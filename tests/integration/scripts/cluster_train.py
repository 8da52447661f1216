"""Training under a scheduler's environment, for the preemption, restart and multi-node tests.

The cluster is whatever the environment variables say (SLURM_*, torchrun's, NODE_RANK...), or,
with ``--custom-env``, ``TwoNodeCluster`` below: a user's ClusterEnvironment that starts one
process per node and lets fulmen launch the rest. Writes ``<out>/rank<R>.json`` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from torch.utils.data import DataLoader
from train import Indexed, Model

import fulmen
from fulmen.callbacks import ModelCheckpoint


class TwoNodeCluster(fulmen.ClusterEnvironment):
    """Our cluster starts one process per node with CLUSTER_NODE_RANK / CLUSTER_MAIN_ADDR /
    CLUSTER_MAIN_PORT set; fulmen launches the other local processes."""

    def __init__(self) -> None:
        self._world_size, self._rank = 1, 0

    @property
    def creates_processes_externally(self) -> bool:
        return False

    @property
    def main_address(self) -> str:
        return os.environ["CLUSTER_MAIN_ADDR"]

    @property
    def main_port(self) -> int:
        return int(os.environ["CLUSTER_MAIN_PORT"])

    @staticmethod
    def detect() -> bool:
        return "CLUSTER_NODE_RANK" in os.environ

    def world_size(self) -> int:
        return self._world_size

    def set_world_size(self, size: int) -> None:
        self._world_size = size

    def global_rank(self) -> int:
        return self._rank

    def set_global_rank(self, rank: int) -> None:
        self._rank = rank

    def local_rank(self) -> int:
        return int(os.environ.get("LOCAL_RANK", 0))

    def node_rank(self) -> int:
        return int(os.environ["CLUSTER_NODE_RANK"])


class Interrupt(fulmen.Callback):
    """At ``step`` on ``rank``: send ourselves ``sig``, or wait for the test to send it, or
    crash (only on the first start of an elastic job)."""

    def __init__(self, step: int, rank: int, sig: str, mode: str, out: Path) -> None:
        self.step, self.rank, self.mode, self.out = step, rank, mode, out
        self.sig = getattr(signal, sig)

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.global_step != self.step or trainer.global_rank != self.rank:
            return
        if self.mode == "self":
            os.kill(os.getpid(), self.sig)
        elif self.mode == "wait":  # the test sees this file and signals us from outside
            (self.out / f"ready{trainer.global_rank}").write_text(str(os.getpid()))
            deadline = time.monotonic() + 60
            while not (self.out / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        elif self.mode == "crash" and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
            raise RuntimeError(f"rank {trainer.global_rank} fails at step {self.step}")


class StartStep(fulmen.Callback):
    """Records the step fit started at, and how many preemption votes the ranks held."""

    def __init__(self, step_seconds: float = 0.0) -> None:
        self.step_seconds, self.votes = step_seconds, 0

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self.global_step = trainer.global_step

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        time.sleep(self.step_seconds)  # slower steps than the vote interval: a vote per step

    def on_train_end(self, trainer: Any, module: Any) -> None:
        preemption = trainer.run_state.preemption
        self.votes = preemption.votes if preemption is not None else 0


def fsdp(sharding: str) -> Any:
    from fulmen_strategies import FSDPStrategy

    return FSDPStrategy(sharding_strategy=sharding)


def mesh_shape(strategy: Any) -> list[int] | None:
    mesh = strategy.device_mesh
    return None if mesh is None else list(mesh.shape)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--custom-env", action="store_true")
    parser.add_argument("--at-step", type=int, default=-1)
    parser.add_argument("--at-rank", type=int, default=0)
    parser.add_argument("--signal", default="SIGUSR1")
    parser.add_argument("--mode", choices=["self", "wait", "crash"], default="self")
    parser.add_argument("--every-n-steps", type=int, default=None)
    parser.add_argument("--sharding", default=None,
                        help="train with FSDPStrategy(sharding_strategy=...) (e.g. HYBRID_SHARD)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--step-seconds", type=float, default=0.0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    out = Path(args.out)
    start = StartStep(args.step_seconds)
    callbacks: list[Any] = [start, ModelCheckpoint(dirpath=out / "ckpt", save_top_k=-1,
                                                   every_n_train_steps=args.every_n_steps)]
    if args.at_step >= 0:
        callbacks.append(Interrupt(args.at_step, args.at_rank, args.signal, args.mode, out))
    trainer = fulmen.Trainer(
        accelerator="cpu", devices=args.devices, num_nodes=args.num_nodes, max_epochs=args.epochs,
        plugins=[TwoNodeCluster()] if args.custom_env else None, callbacks=callbacks,
        strategy=fsdp(args.sharding) if args.sharding else "auto",
        enable_progress_bar=False, enable_model_summary=False, logger=False,
        default_root_dir=str(out), num_sanity_val_steps=0)
    model = Model()
    trainer.fit(model, DataLoader(Indexed(32), batch_size=args.batch_size))
    if args.sharding:  # the full weights (a collective: every rank gathers them)
        weights = [v.flatten().tolist() for v in trainer.strategy.module_state_dict().values()]
    else:
        weights = [p.detach().flatten().tolist() for p in model.parameters()]
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({
        "environment": trainer.cluster_environment.name, "world_size": trainer.world_size,
        "node_rank": trainer.node_rank, "local_rank": trainer.local_rank,
        "start_step": start.global_step, "global_step": trainer.global_step,
        "votes": start.votes, "weights": weights, "mesh": mesh_shape(trainer.strategy),
        "seen": model.seen}))


if __name__ == "__main__":
    main()
