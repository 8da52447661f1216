"""The tiny model, data and Lite program the kit trains (importable by spawned workers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import fulmen


class Indexed(Dataset[tuple[torch.Tensor, torch.Tensor, int]]):
    """``n`` seeded samples ``(x, y, index)``: a rank reports which indices it saw."""

    def __init__(self, n: int = 32) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        return self.x[i], self.y[i], i


def make_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def parallelize_on(net: torch.nn.Module, mesh: Any) -> torch.nn.Module:
    """Parallelise ``make_net()``'s network on a strategy's ``device_mesh``, as a user's
    ``configure_model`` (Trainer) or code before ``setup_module`` (Lite) would: a
    ``"tensor_parallel"`` dimension splits the first layer by columns and the last by rows; a
    ``"data_parallel"`` dimension (or a 1-D mesh without those names) gets ``fully_shard``. A
    network that is already parallelised is returned as it is."""
    from torch.distributed.tensor import DTensor

    if mesh is None or any(isinstance(p, DTensor) for p in net.parameters()):
        return net
    names = tuple(mesh.mesh_dim_names or ())
    if "tensor_parallel" in names and mesh["tensor_parallel"].size() > 1:
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        parallelize_module(net, mesh["tensor_parallel"],
                           {"0": ColwiseParallel(), "2": RowwiseParallel()})
    shard_over = mesh["data_parallel"] if "data_parallel" in names else (
        mesh if mesh.ndim == 1 and "tensor_parallel" not in names else None)
    if shard_over is not None and shard_over.size() > 1:
        from torch.distributed.fsdp import fully_shard

        fully_shard(net, mesh=shard_over)
    return net


def loader() -> DataLoader[Any]:
    """The kit's training data, shuffled with a fixed seed: the Trainer (always, over several
    processes: Lightning's rule) and Lite (as Fabric: when the loader shuffles) then shard it
    with the same seeded distributed sampler, and one process reads it in the same order."""
    return DataLoader(Indexed(), batch_size=4, shuffle=True,
                      generator=torch.Generator().manual_seed(0))


class KitModule(fulmen.Module):
    """Counts its steps and the samples it saw; at the end of ``fit`` each process writes
    ``<folder>/<tag>-rank<N>.json`` (the run may happen in other processes than the caller's)
    and calls ``at_train_end(module)`` (the distributed checks hook in there)."""

    def __init__(self, folder: str, tag: str, at_train_end: Any = None) -> None:
        super().__init__()
        self.net = make_net()
        self.folder, self.tag, self.at_train_end = folder, tag, at_train_end
        self.steps = 0
        self.seen: list[int] = []
        self.start: dict[str, Any] = {}

    def configure_model(self) -> None:
        """On a strategy with a device mesh, the model parallelises itself (as users do)."""
        parallelize_on(self.net, self.device_mesh)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y, idx = batch
        self.steps += 1
        self.seen.extend(int(i) for i in idx)
        return F.cross_entropy(self(x).float(), y)

    def on_train_start(self) -> None:
        self.start = {"step": self.trainer.global_step,
                      "weights": flat(self.trainer.strategy.module_state_dict())}

    def on_train_end(self) -> None:
        strategy = self.trainer.strategy
        summary = {"rank": strategy.global_rank, "world_size": strategy.world_size,
                   "steps": self.steps, "seen": self.seen, "start_step": self.start["step"],
                   "start_weights": self.start["weights"],
                   "weights": flat(strategy.module_state_dict())}
        path = Path(self.folder) / f"{self.tag}-rank{strategy.global_rank}.json"
        path.write_text(json.dumps(summary))
        # Saved inside the run: with spawned workers the caller's strategy holds no module.
        self.trainer.save_checkpoint(Path(self.folder) / f"{self.tag}.ckpt")
        if self.at_train_end is not None:
            self.at_train_end(self)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> Any:
        return loader()


def summary(folder: Path, tag: str, rank: int = 0) -> dict[str, Any]:
    path = folder / f"{tag}-rank{rank}.json"
    assert path.exists(), f"rank {rank} never reached the end of fit (no {path.name})"
    return dict(json.loads(path.read_text()))


def flat(state: dict[str, Any]) -> list[float]:
    """Every floating-point tensor of a state dict, flattened into one list (for comparing)."""
    out: list[float] = []
    for value in state.values():
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            full = getattr(value, "full_tensor", None)  # a DTensor (sharded strategies)
            tensor = full() if callable(full) else value
            out.extend(tensor.detach().float().cpu().flatten().tolist())
    return out


def close(a: list[float], b: list[float], tol: float = 1e-3) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol * (1 + abs(y)) for x, y in zip(a, b))


def lite_train(lite: fulmen.Lite, folder: str, steps: int = 2) -> dict[str, Any]:
    """Train ``steps`` batches with Lite, save, load into a new module; what each rank saw."""
    mesh = lite.strategy.device_mesh  # a mesh strategy expects a parallelised model
    model = lite.setup_module(parallelize_on(make_net(), mesh))
    optimizer = lite.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
    data = lite.setup_dataloaders(loader())
    seen: list[int] = []
    losses: list[float] = []
    for step, (x, y, idx) in enumerate(data):
        if step == steps:
            break
        seen.extend(int(i) for i in idx)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x).float(), y)
        lite.backward(loss)
        optimizer.step()
        losses.append(float(loss.detach()))
    path = Path(folder) / "lite.ckpt"
    lite.save(path, {"model": model, "optimizer": optimizer, "step": steps})
    restored = lite.setup_module(parallelize_on(make_net(), mesh))
    rest = lite.load(path, {"model": restored})
    # as the Trainer's side reads it (module_state_dict gathers a sharded or partitioned module)
    full = flat(lite.strategy.module_state_dict(model.module))
    return {"seen": seen, "losses": losses, "rest": rest, "mesh": mesh, "full": full,
            "weights": flat(model.state_dict()), "restored": flat(restored.state_dict())}
