"""Benchmark: modern parallelism on CPU processes (gloo). Four parts, one run:

1. Per-rank bytes of parameters + gradients + optimizer state (AdamW) for the tiny Llama of
   ``examples/llama`` scaled up, under ``ddp``, ``fsdp`` and ``model_parallel`` 2 x 2, on 4
   ranks. Goal: the sharded ones <= 1/4 of ddp's + 10%.
2. Activation checkpointing (one process): bytes the forward saves for backward (peak
   activation memory, counted with ``saved_tensors_hooks``) and step time, with no
   checkpointing, fulmen's ``activation_checkpointing_policy`` and torch's own
   ``checkpoint_wrapper`` (non-reentrant) on the same blocks. Goal: fulmen = torch's +-5%.
3. ``torch.compile`` of the tiny Llama (one process): steady step time compiled vs eager
   (inductor when a C++ compiler is present, else aot_eager).
4. Meta-device init: per-rank peak RSS after set-up with ``model_parallel`` on 4 ranks, model
   built on the meta device vs built whole on every rank first.

On a shared machine timings are noisy; byte counts are exact.

    .venv/bin/python tests/benchmarks/parallel.py [memory] [checkpointing] [compile] [meta]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "llama"))

MB = 1024 * 1024


def config(big: bool = False) -> Any:
    from model import LlamaConfig

    if big:
        return LlamaConfig(vocab_size=1024, dim=512, n_layers=8, n_heads=8, hidden_dim=1536,
                           max_seq_len=32)
    return LlamaConfig(vocab_size=256, dim=128, n_layers=4, n_heads=4, hidden_dim=384,
                       max_seq_len=32)


def local_bytes(tensors: Any) -> int:
    from torch.distributed.tensor import DTensor

    total = 0
    for t in tensors:
        t = t.to_local() if isinstance(t, DTensor) else t
        total += t.numel() * t.element_size()
    return total


# ====================================================================== workers


def memory_worker(lite: Any, strategy: str, out: str) -> None:
    import torch
    from model import Llama, batches, loss_fn

    cfg = config()
    torch.manual_seed(0)
    model = lite.setup_module(Llama(cfg))
    optimizer = lite.setup_optimizers(torch.optim.AdamW(model.parameters(), lr=1e-3))
    for tokens in batches(cfg, 2, 8):
        loss = loss_fn(model(tokens[:, :-1]), tokens[:, 1:])
        optimizer.zero_grad()
        lite.backward(loss)
        optimizer.step()
    params = list(model.parameters())
    state = [v for s in optimizer.state.values() for v in s.values()
             if isinstance(v, torch.Tensor)]
    row = {"params": local_bytes(params), "grads": local_bytes(
        [p.grad for p in params if p.grad is not None]), "optimizer": local_bytes(state)}
    if lite.is_global_zero:
        Path(out).write_text(json.dumps(row))


def meta_worker(lite: Any, meta: bool, out: str) -> None:
    import resource

    import torch
    from model import Llama

    cfg = config(big=True)
    if meta:
        with torch.device("meta"):
            model = Llama(cfg)
    else:
        torch.manual_seed(0)
        model = Llama(cfg)
    lite.setup_module(model)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    peaks = lite.all_gather(torch.tensor(float(rss)))
    if lite.is_global_zero:
        Path(out).write_text(json.dumps({"peak_rss": [float(x) for x in peaks]}))


def worker(args: argparse.Namespace) -> None:
    import torch

    import fulmen

    torch.set_num_threads(1)
    if args.strategy == "model_parallel":
        from parallelize import parallelize

        from fulmen_strategies import ModelParallelStrategy

        strategy: Any = ModelParallelStrategy(parallelize_fn=parallelize, data_parallel_size=2,
                                              tensor_parallel_size=2)
    elif args.strategy == "fsdp":
        from model import TransformerBlock

        from fulmen_strategies import FSDPStrategy

        strategy = FSDPStrategy(auto_wrap_policy={TransformerBlock})
    else:
        strategy = args.strategy
    lite = fulmen.Lite(accelerator="cpu", devices=4, strategy=strategy)
    if args.worker == "memory":
        lite.launch(memory_worker, args.strategy, args.out)
    else:
        lite.launch(meta_worker, args.meta, args.out)


def run_worker(*argv: str) -> dict[str, Any]:
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"parallel-bench-{os.getpid()}.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, __file__, *argv, "--out", str(out)], check=True, env=env,
                   timeout=600)
    result: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return result


# ====================================================================== parts


def part_memory() -> None:
    rows = {s: run_worker("--worker", "memory", "--strategy", s)
            for s in ("ddp", "fsdp", "model_parallel")}
    base = sum(rows["ddp"].values())
    print("\n1. per-rank bytes, 4 ranks (params + grads + AdamW state)")
    for name, row in rows.items():
        total = sum(row.values())
        verdict = "" if name == "ddp" else ("  goal <= 0.275: " + (
            "met" if total / base <= 0.275 else "NOT met"))
        print(f"  {name:15s} params {row['params'] / MB:7.2f} MB  grads {row['grads'] / MB:7.2f}"
              f" MB  optimizer {row['optimizer'] / MB:7.2f} MB  total {total / MB:7.2f} MB  "
              f"{total / base:.3f} of ddp{verdict}")


def part_checkpointing(steps: int = 10) -> None:
    import torch
    from model import Llama, TransformerBlock, batches, loss_fn
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        checkpoint_wrapper,
    )

    from fulmen_strategies import activation_checkpointing as ac

    torch.set_num_threads(1)
    cfg = config()
    data = batches(cfg, steps + 2, 16)

    def build(kind: str) -> torch.nn.Module:
        torch.manual_seed(0)
        model = Llama(cfg)
        if kind == "fulmen":
            ac.apply(model, ac.check_policy("bench", {TransformerBlock}))
        elif kind == "torch":
            for i, block in enumerate(model.layers):
                model.layers[i] = checkpoint_wrapper(
                    block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
        return model

    def measure(kind: str) -> tuple[int, float]:
        model = build(kind)
        saved = [0]

        def pack(t: torch.Tensor) -> torch.Tensor:
            saved[0] += t.numel() * t.element_size()
            return t

        times = []
        for i, tokens in enumerate(data):
            saved[0] = 0
            start = time.perf_counter()
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                loss = loss_fn(model(tokens[:, :-1]), tokens[:, 1:])
            peak = saved[0]
            loss.backward()
            model.zero_grad()
            if i >= 2:
                times.append(time.perf_counter() - start)
        return peak, statistics.median(times)

    results = {kind: measure(kind) for kind in ("none", "fulmen", "torch")}
    print("\n2. activation checkpointing (one process; saved-for-backward bytes in forward)")
    for kind, (peak, step) in results.items():
        print(f"  {kind:7s} activations {peak / MB:7.2f} MB  step {step * 1e3:7.1f} ms  "
              f"vs torch: memory {peak / results['torch'][0]:.3f}, time "
              f"{step / results['torch'][1]:.3f}")


def part_compile(steps: int = 15) -> None:
    import torch
    from model import Llama, batches, loss_fn

    torch.set_num_threads(1)
    cfg = config()
    data = batches(cfg, steps, 16)
    backend = "inductor" if os.environ.get("CXX") or shutil.which("g++") else "aot_eager"

    def measure(compiled: bool) -> tuple[float, float]:
        torch.manual_seed(0)
        model = Llama(cfg)
        if compiled:
            model.compile(backend=backend)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        times = []
        for tokens in data:
            start = time.perf_counter()
            loss = loss_fn(model(tokens[:, :-1]), tokens[:, 1:])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            times.append(time.perf_counter() - start)
        return times[0], statistics.median(times[3:])

    eager, compiled = measure(False), measure(True)
    print(f"\n3. torch.compile (backend {backend}, one process): first step "
          f"{compiled[0]:.1f} s; steady step eager {eager[1] * 1e3:.1f} ms, compiled "
          f"{compiled[1] * 1e3:.1f} ms ({compiled[1] / eager[1]:.2f}x)")


def part_meta() -> None:
    full = run_worker("--worker", "meta", "--strategy", "model_parallel")
    meta = run_worker("--worker", "meta", "--strategy", "model_parallel", "--meta")
    print("\n4. model_parallel 2 x 2 set-up, per-rank peak RSS (MB)")
    for name, row in (("built whole", full), ("meta init", meta)):
        print(f"  {name:12s} " + "  ".join(f"{x / MB:7.1f}" for x in row["peak_rss"]))
    print(f"  meta / whole (max over ranks): "
          f"{max(meta['peak_rss']) / max(full['peak_rss']):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("parts", nargs="*", default=["memory", "checkpointing", "compile",
                                                      "meta"])
    parser.add_argument("--worker", default=None)
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--meta", action="store_true")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    parts = {"memory": part_memory, "checkpointing": part_checkpointing,
             "compile": part_compile, "meta": part_meta}
    for name in args.parts:
        parts[name]()
    return None


if __name__ == "__main__":
    main()
