"""Trainer + model_parallel: the Module builds its layers in configure_model (on the meta device
under this strategy) and parallelises them on self.device_mesh; or one plain process."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from tiny_models import Indexed
from torch.utils.data import DataLoader

import fulmen


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1: torch.nn.Module | None = None
        self.built_on: list[str] = []
        self.losses: list[float] = []

    def configure_model(self) -> None:
        if self.w1 is not None:
            return  # idempotent: every stage calls it
        torch.manual_seed(0)
        self.w1, self.w2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 2)
        self.built_on.append(str(self.w1.weight.device))
        mesh = self.device_mesh
        if mesh is not None and mesh["tensor_parallel"].size() > 1:
            from torch.distributed.tensor.parallel import (
                ColwiseParallel,
                RowwiseParallel,
                parallelize_module,
            )

            parallelize_module(self, mesh["tensor_parallel"], {"w1": ColwiseParallel(),
                                                              "w2": RowwiseParallel()})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(torch.tanh(self.w1(x)))

    def training_step(self, batch, batch_idx):
        x, y, _ = batch
        loss = F.cross_entropy(self(x), y)
        self.log("loss", loss, sync_dist=True)
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--devices", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    strategy = "model_parallel" if args.devices > 1 else "auto"
    trainer = fulmen.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy,
                             max_epochs=2, logger=False, enable_progress_bar=False,
                             enable_model_summary=False, enable_checkpointing=False)
    model = Model()
    trainer.fit(model, DataLoader(Indexed(32), batch_size=8))
    if args.devices > 1:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    else:
        state = model.state_dict()
    Path(args.out, f"rank{trainer.global_rank}.json").write_text(json.dumps({
        "weights": {k: v.tolist() for k, v in state.items()}, "built_on": model.built_on,
        "losses": model.losses,
        "mesh": list(trainer.strategy.mesh_shape()) if args.devices > 1 else None}))


if __name__ == "__main__":
    main()
