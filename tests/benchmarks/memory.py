"""Benchmark: per-rank memory of the sharding strategies, world size 2 (CPU processes, gloo).

A ~10.5M-parameter MLP (ten 1024x1024 layers) trains with Adam under ``ddp``, ``ddp_sharded``
(when fulmen-fairscale is installed), ``deepspeed_stage_1/2/3`` and ``fsdp``. In each run, rank
0 counts the bytes of every live tensor storage (those ``gc`` sees plus those reachable from the
module and the optimizers, deduplicated by storage) right before the third optimizer step, and
sorts them into: parameters (the rank's local shard), gradients (``.grad`` and the ZeRO
optimizer's gradient partitions), optimizer state (Adam's exp_avg, exp_avg_sq, step), the fp32
master copies ZeRO keeps beside the parameters, and other (buffers). Throughput is samples/s over
20 steps after 3 warm-up steps, relative to ``ddp`` in the same run (one pass: on a shared
machine expect noise of tens of percent). Goal: each sharded strategy's optimizer state <= 1/2 of
ddp's + 10%. Name strategies as arguments to run only those (``ddp`` is always run).

    .venv/bin/python tests/benchmarks/memory.py
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STRATEGIES = ["ddp", "ddp_sharded", "deepspeed_stage_1", "deepspeed_stage_2",
              "deepspeed_stage_3", "fsdp"]
LAYERS, WIDTH, BATCH = 10, 1024, 16
WARMUP, MEASURED = 3, 20
MB = 1024 * 1024


# ====================================================================== worker (2 processes)


def _storage(t: Any) -> tuple[int, int] | None:
    try:
        if hasattr(t, "to_local"):  # a DTensor (fsdp): its local shard
            t = t.to_local()
        s = t.untyped_storage()
        return (s.data_ptr(), s.nbytes()) if s.nbytes() else None
    except Exception:  # a wrapper without storage of its own (DTensor), a freed storage
        return None


def _tensors(obj: Any, depth: int = 3) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth == 0:
        return []
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v, depth - 1)]
    if isinstance(obj, list | tuple):
        return [t for v in obj for t in _tensors(v, depth - 1)]
    return []


def _inner_optimizers(top: Any) -> list[Any]:
    import torch

    found, current = [], top
    for _ in range(4):
        if isinstance(current, torch.optim.Optimizer):
            found.append(current)
        nxt = next((getattr(current, a) for a in ("optimizer", "optim", "_optimizer")
                    if isinstance(getattr(current, a, None), torch.optim.Optimizer)), None)
        if nxt is None or nxt is current:
            break
        current = nxt
    return found


def census(module: Any, optimizer: Any) -> dict[str, int]:
    """Bytes per category of every live tensor storage in this process."""
    import torch

    live: dict[int, int] = {}
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor):
                key = _storage(obj)
                if key is not None:
                    live[key[0]] = key[1]
        except Exception:
            continue
    seen: list[Any] = []

    def note(t: Any) -> tuple[int, int] | None:
        seen.append(t)
        return _storage(t)

    params: set[int] = set()
    for p in module.parameters():
        local = p.to_local() if hasattr(p, "to_local") else getattr(p, "ds_tensor", None)
        for t in (p, local):
            key = note(t) if t is not None else None
            if key is not None:
                params.add(key[0])
    state: set[int] = set()
    masters: set[int] = set()
    grads: set[int] = set()
    for opt in _inner_optimizers(optimizer):
        for value in opt.state.values():
            state.update(k[0] for t in _tensors(value) if (k := note(t)))
        for group in opt.param_groups:
            for p in group["params"]:
                key = note(p)
                if key and key[0] not in params:
                    masters.add(key[0])
                if p.grad is not None and (k := note(p.grad)):
                    grads.add(k[0])
    for p in module.parameters():
        grad = p.grad.to_local() if p.grad is not None and hasattr(p.grad, "to_local") \
            else p.grad
        if grad is not None and (k := note(grad)):
            grads.add(k[0])
    for name, value in vars(optimizer).items():  # ZeRO keeps gradient partitions here
        if "grad" in name.lower():
            grads.update(k[0] for t in _tensors(value) if (k := note(t)))
    for t in seen:  # gradients made by autograd have no Python object until someone asks
        key = _storage(t)
        if key is not None:
            live[key[0]] = key[1]
    out = {"params": 0, "grads": 0, "optimizer": 0, "master": 0, "other": 0}
    for ptr, nbytes in live.items():
        kind = ("params" if ptr in params else "optimizer" if ptr in state else
                "master" if ptr in masters else "grads" if ptr in grads else "other")
        out[kind] += nbytes
    return out


def worker(strategy: str, out: str) -> None:
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import fulmen

    class Net(fulmen.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.net = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH)
                                             for _ in range(LAYERS)])
            self.measured: dict[str, Any] = {}
            self.times: list[float] = []

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            (x,) = batch
            return self.net(x).pow(2).mean()

        def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
            self.times.append(time.perf_counter())

        def on_before_optimizer_step(self, optimizer: Any) -> None:
            if self.trainer.global_step == 2 and self.trainer.is_global_zero:
                self.measured = census(self, self.trainer.optimizers[0])

        def configure_optimizers(self) -> Any:
            return torch.optim.Adam(self.parameters(), lr=1e-4)

    steps = WARMUP + MEASURED
    data = DataLoader(TensorDataset(torch.randn(steps * BATCH * 2, WIDTH)), batch_size=BATCH)
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_steps=steps,
                             logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             num_sanity_val_steps=0)
    model = Net()
    trainer.fit(model, data)
    end = time.perf_counter()
    if trainer.is_global_zero:
        seconds = end - model.times[WARMUP]
        total = sum(p.numel() for p in Net().parameters())
        Path(out).write_text(json.dumps({**model.measured, "parameters": total,
                                         "samples_per_s": MEASURED * BATCH * 2 / seconds}))


# ====================================================================== driver


def installed(name: str) -> bool:
    import fulmen

    return fulmen.get_plugin_manager().catalog().find("strategy", name) is not None


def main() -> None:
    results: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    chosen = ["ddp", *(n for n in sys.argv[1:] if n != "ddp")] if sys.argv[1:] else STRATEGIES
    for name in chosen:
        if not installed(name):
            notes[name] = "not installed (pip install the plugin that provides it)"
            continue
        out = Path(os.environ.get("TMPDIR", "/tmp")) / f"fulmen-memory-{os.getpid()}-{name}.json"
        env = {k: v for k, v in os.environ.items() if k not in (
            "LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")}
        done = subprocess.run([sys.executable, __file__, "--worker", name, str(out)],
                              capture_output=True, text=True, env=env, timeout=600)
        if done.returncode or not out.exists():
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            notes[name] = f"failed: {tail[:160]}"
            continue
        results[name] = json.loads(out.read_text())
        out.unlink()
    if "ddp" not in results:
        raise SystemExit(f"the ddp baseline failed: {notes.get('ddp')}")
    base = results["ddp"]
    print(f"world size 2, {base['parameters'] / 1e6:.1f}M parameters, Adam, fp32; MiB per rank")
    header = (f"| {'strategy':<18} | params | grads | Adam state | fp32 master | total | "
              "other | Adam state vs ddp | samples/s vs ddp |")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name in chosen:
        if name not in results:
            print(f"| {name:<18} | {notes[name]} |")
            continue
        r = results[name]
        total = r["params"] + r["grads"] + r["optimizer"] + r["master"]
        print(f"| {name:<18} | {r['params'] / MB:6.1f} | {r['grads'] / MB:5.1f} | "
              f"{r['optimizer'] / MB:10.1f} | {r['master'] / MB:11.1f} | {total / MB:5.1f} | "
              f"{r['other'] / MB:5.1f} | "
              f"{r['optimizer'] / base['optimizer']:17.2f} | "
              f"{r['samples_per_s'] / base['samples_per_s']:16.2f} |")
    print()
    limit = 0.5 * 1.1
    for name, r in results.items():
        if name == "ddp":
            continue
        ratio = r["optimizer"] / base["optimizer"]
        verdict = "meets" if ratio <= limit else "MISSES"
        print(f"goal {name}: Adam state {ratio:.2f}x of ddp's ({verdict} <= {limit:.2f}x)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
