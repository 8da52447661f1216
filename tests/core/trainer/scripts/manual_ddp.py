"""Manual optimization under 2-process data parallelism (gloo): each rank sees different data.

Writes ``<out>/rank<R>.json`` (final weights) from every process, at the end of fit inside the
process (so ``ddp_spawn`` workers write too); with ``--strategy single_device`` it trains on both
ranks' data at once (the averaged-gradient reference). ``--accumulate k``: backward every batch,
step every ``k`` batches, skipping the gradient reduction of the first ``k - 1`` backwards
(``opt.toggle_model(sync_grad=False)``). ``--model gan``: two optimizers over a generator and a
discriminator, each step ``toggle_optimizer``-ed, the discriminator's gradients clipped, the
discriminator's loss through the generator just updated. ``--strategy fsdp_units``: fsdp with
every ``Linear`` sharded as its own unit. Under fsdp the JSON counts FSDP's all-gathers and
reduce-scatters.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.tensor import DTensor
from torch.utils.data import DataLoader, Dataset

import fulmen

COUNTS = {"all_gather": 0, "reduce_scatter": 0}


def _count(name: str, collective: Any) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        COUNTS[name] += 1
        return collective(*args, **kwargs)
    return counted


dist.all_gather_single = _count("all_gather", dist.all_gather_single)  # what FSDP2 calls
dist.reduce_scatter_single = _count("reduce_scatter", dist.reduce_scatter_single)


class PerRank(Dataset):
    """8 samples per rank; rank r's sample i is the same tensor on every run (``width``
    features: the GAN's are 4 real ones and 2 of noise)."""

    def __init__(self, ranks: list[int], width: int = 4) -> None:
        g = torch.Generator().manual_seed(1)
        data = torch.randn(2, 8, width, generator=g)
        self.x = torch.cat([data[r] for r in ranks]) if len(ranks) > 1 else data[ranks[0]]
        self.width = len(ranks)

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> Any:
        if self.width == 1:
            return self.x[i]
        return torch.stack([self.x[i], self.x[8 + i]])


class Manual(fulmen.Module):
    def __init__(self, out: str, accumulate: int = 1) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Linear(4, 1)
        self.automatic_optimization = False
        self.out, self.accumulate = out, accumulate

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        opt = self.optimizers()
        loss = self.net(batch.reshape(-1, 4)).pow(2).mean()
        if self.accumulate == 1:
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            return
        last = (batch_idx + 1) % self.accumulate == 0
        with opt.toggle_model(sync_grad=last):
            self.manual_backward(loss / self.accumulate)
        if last:
            opt.step()
            opt.zero_grad()

    def on_fit_end(self) -> None:
        write(self)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Gan(fulmen.Module):
    """GAN-like: the generator's step first (the discriminator toggled off), then the
    discriminator's on a loss through the updated generator (toggled off) with no zero_grad
    before its backward: a gradient leaking from the generator's backward would be stepped."""

    def __init__(self, out: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gen = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(),
                                       torch.nn.Linear(8, 4))
        self.disc = torch.nn.Linear(4, 1)
        self.automatic_optimization = False
        self.out = out

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        opt_g, opt_d = self.optimizers()
        batch = batch.reshape(-1, 6)
        real, noise = batch[:, :4], batch[:, 4:]
        self.toggle_optimizer(opt_g)
        g_loss = F.softplus(-self.disc(self.gen(noise))).mean()
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)
        self.toggle_optimizer(opt_d)
        d_loss = F.softplus(-self.disc(real)).mean() + F.softplus(
            self.disc(self.gen(noise))).mean()
        self.manual_backward(d_loss)
        self.clip_gradients(opt_d, gradient_clip_val=0.05, gradient_clip_algorithm="norm")
        opt_d.step()
        opt_d.zero_grad()
        self.untoggle_optimizer(opt_d)

    def on_fit_end(self) -> None:
        write(self)

    def configure_optimizers(self) -> Any:
        return [torch.optim.SGD(self.gen.parameters(), lr=0.5),
                torch.optim.SGD(self.disc.parameters(), lr=0.5)]


def write(module: Manual | Gan) -> None:
    # FSDP2 leaves the parameters sharded (DTensor): gather them for the comparison.
    weights = [(p.full_tensor() if isinstance(p, DTensor) else p).detach().tolist()
               for p in module.parameters()]
    Path(module.out, f"rank{module.global_rank}.json").write_text(json.dumps(
        {"weights": weights, "global_step": module.global_step, "collectives": COUNTS}))


class PerRankLoader(fulmen.DataModule):
    """Each process builds its own rank's data (under ``ddp_spawn`` too)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def train_dataloader(self) -> DataLoader:
        trainer = self.trainer
        ranks = [trainer.global_rank] if trainer.world_size == 2 else [0, 1]
        return DataLoader(PerRank(ranks, self.width), batch_size=2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--out", required=True)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--model", choices=("linear", "gan"), default="linear")
    args = parser.parse_args()
    torch.set_num_threads(1)
    devices = 1 if args.strategy == "single_device" else 2
    strategy: Any = args.strategy
    if strategy == "fsdp_units":
        from fulmen_strategies import FSDPStrategy

        strategy = FSDPStrategy(auto_wrap_policy={torch.nn.Linear})
    trainer = fulmen.Trainer(accelerator="cpu", devices=devices, strategy=strategy,
                             max_epochs=1, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             use_distributed_sampler=False)
    model = Gan(args.out) if args.model == "gan" else Manual(args.out, args.accumulate)
    trainer.fit(model, PerRankLoader(6 if args.model == "gan" else 4))


if __name__ == "__main__":
    main()
