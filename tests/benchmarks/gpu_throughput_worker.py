"""One contender of ``gpu_throughput.py`` in its own process: trains a GPT-2-small-sized decoder
for ``warmup + steps`` optimizer steps and prints one JSON line (time per step over the timed
steps, tokens/s, MFU, peak memory).

Contenders: ``raw`` (a plain PyTorch loop), ``fulmen`` (``fulmen.Trainer``), ``lite``
(``fulmen.Lite``), ``lightning`` (``lightning.pytorch.Trainer``) and ``fabric``
(``lightning.fabric.Fabric``). All train the same model from the same seed on the same
generated tokens, with AdamW and bf16 autocast (``bf16-mixed``); the clock is read, after a
device synchronisation, at the top of step ``warmup`` and at the end of the last step — the
same two points in every loop.

    python tests/benchmarks/gpu_throughput_worker.py --contender raw --compile 0
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

SIZES = {  # name: (layers, heads, width, vocabulary, context)
    "gpt2-small": (12, 12, 768, 50304, 1024),
    "tiny": (2, 2, 64, 512, 64),  # --dry-run on the CPU
}


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    """GPT-2's decoder: learned positions, pre-norm blocks, tied input and output embeddings."""

    def __init__(self, size: str) -> None:
        super().__init__()
        layers, heads, width, vocab, context = SIZES[size]
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight
        for name, p in self.named_parameters():
            if p.dim() > 1:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "out.weight")) \
                    else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The loss (as nanoGPT's model returns it), so that ``torch.compile`` of the model covers
        the same region — the decoder and the loss — in every contender."""
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return lm_loss(self.head(self.ln(x)), targets)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def make_loader(size: str, batch: int, steps: int) -> DataLoader:
    vocab, context = SIZES[size][3], SIZES[size][4]
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (batch * steps, context + 1), generator=g)
    return DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=batch,
                      pin_memory=torch.cuda.is_available())


def make_optimizer(params: Any, device: torch.device) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1, fused=device.type == "cuda")


class Clock:
    """Reads the time, after synchronising the device, at the top of step ``warmup`` and after
    the last step: ``tick(i)`` at the top of step i, ``stop()`` after the loop."""

    def __init__(self, warmup: int, device: torch.device, profile: int = 0) -> None:
        self.warmup, self.device, self.profile = warmup, device, profile
        self.start = self.end = 0.0
        self.profiler: Any = None

    def sync(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def tick(self, step: int) -> None:
        if step == self.warmup:
            self.start = self.sync()
            if self.profile:
                from torch.profiler import ProfilerActivity, profile

                self.profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                self.profiler.__enter__()
        elif self.profiler is not None and step == self.warmup + self.profile:
            self.sync()
            self.profiler.__exit__(None, None, None)
            report(self.profiler)
            self.profiler = None

    def stop(self) -> None:
        self.end = self.sync()


def report(profiler: Any) -> None:
    """What the host did in the profiled steps: the calls that wait for the device, and the top
    of the host's time."""
    events = profiler.key_averages()
    waits = [e for e in events if any(k in e.key for k in (
        "Synchronize", "cudaMemcpy", "item", "_local_scalar_dense", "cudaFree", "cudaMalloc"))]
    print("## calls that can wait for the device (count, host total us)")
    for e in sorted(waits, key=lambda e: -e.cpu_time_total):
        print(f"{e.count:6d} {e.cpu_time_total:12.0f}  {e.key}")
    print(events.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))


def run_raw(args: argparse.Namespace, loader: DataLoader, clock: Clock) -> None:
    device = clock.device
    model = GPT(args.size).to(device)
    optimizer = make_optimizer(model.parameters(), device)
    step_model = torch.compile(model) if args.compile else model
    model.train()
    for i, (x, y) in enumerate(loader):
        clock.tick(i)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = step_model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    clock.stop()


def run_lite(args: argparse.Namespace, loader: DataLoader, clock: Clock, fabric: bool) -> None:
    if fabric:
        from lightning.fabric import Fabric as Lite
    else:
        from fulmen import Lite  # type: ignore[assignment]
    lite = Lite(accelerator=clock.device.type, devices=1, precision="bf16-mixed")
    with lite.init_module():
        model = GPT(args.size)
    optimizer = make_optimizer(model.parameters(), clock.device)
    if args.compile:
        model = torch.compile(model)
    model, optimizer = lite.setup(model, optimizer)
    loader = lite.setup_dataloaders(loader)
    model.train()
    for i, (x, y) in enumerate(loader):
        clock.tick(i)
        loss = model(x, y)
        lite.backward(loss)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    clock.stop()


def run_trainer(args: argparse.Namespace, loader: DataLoader, clock: Clock,
                lightning: bool) -> None:
    if lightning:
        import lightning.pytorch as pl
        base, callback_base, trainer_class = pl.LightningModule, pl.Callback, pl.Trainer
    else:
        import fulmen
        base, callback_base, trainer_class = fulmen.Module, fulmen.Callback, fulmen.Trainer

    class Module(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.gpt = GPT(args.size)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.gpt(x, y)

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            return self(x, y)

        def configure_optimizers(self) -> Any:
            return make_optimizer(self.parameters(), clock.device)

    class Tick(callback_base):  # type: ignore[misc, valid-type]
        def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, i: int) -> None:
            clock.tick(i)

        def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                               i: int) -> None:
            if i == args.warmup + args.steps - 1:  # the loops' clock stops after the last step
                clock.stop()

    options: dict[str, Any] = {
        "accelerator": clock.device.type, "devices": 1, "precision": "bf16-mixed",
        "max_steps": args.warmup + args.steps, "logger": False, "enable_checkpointing": False,
        "enable_progress_bar": False, "enable_model_summary": False,
        "num_sanity_val_steps": 0, "callbacks": [Tick()]}
    if not lightning and args.compile:
        options["compile"] = True
    trainer = trainer_class(**options)
    with torch.device(clock.device):
        module = Module()
    fit_module = torch.compile(module) if lightning and args.compile else module
    trainer.fit(fit_module, loader)


def flops_per_step(size: str, batch: int) -> int:
    from fulmen.utilities.throughput import measure_flops

    context = SIZES[size][4]
    with torch.device("meta"):
        model = GPT(size)
        x = torch.randint(0, 2, (batch, context))
    return measure_flops(model, lambda: model(x, x), lambda loss: loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--contender", required=True,
                        choices=["raw", "fulmen", "lite", "lightning", "fabric"])
    parser.add_argument("--compile", type=int, default=0)
    parser.add_argument("--size", default="gpt2-small", choices=sorted(SIZES))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--profile", type=int, default=0,
                        help="profile this many steps after the warm-up and print the table")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats(device)
    loader = make_loader(args.size, args.batch, args.warmup + args.steps)
    clock = Clock(args.warmup, device, args.profile)
    if args.contender == "raw":
        run_raw(args, loader, clock)
    elif args.contender in ("lite", "fabric"):
        run_lite(args, loader, clock, fabric=args.contender == "fabric")
    else:
        run_trainer(args, loader, clock, lightning=args.contender == "lightning")
    per_step = (clock.end - clock.start) / args.steps
    tokens = args.batch * SIZES[args.size][4]
    flops = flops_per_step(args.size, args.batch)
    peak_flops = None
    if device.type == "cuda":
        from fulmen.utilities.throughput import get_available_flops

        peak_flops = get_available_flops(device, torch.bfloat16)
    print(json.dumps({
        "contender": args.contender, "compile": bool(args.compile), "size": args.size,
        "batch": args.batch, "steps": args.steps, "step_s": per_step,
        "tokens_per_s": tokens / per_step, "flops_per_step": flops,
        "mfu": flops / per_step / peak_flops if peak_flops else None,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(device)
        if device.type == "cuda" else None,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__}))


if __name__ == "__main__":
    main()
