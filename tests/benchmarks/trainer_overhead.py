"""Benchmark: Trainer.fit against a plain PyTorch loop on a tiny MLP, in the same run.

Tiny MLP 32 -> 64 -> 2, batch 64, 3000 optimizer steps, torch.set_num_threads(1), SGD, the same
DataLoader (shuffled, 32 000 samples: 500 steps per epoch) for both. Also the plain loop
written to Lightning's protocol (``optimizer.step(closure)``), for reference. Goals: lean Trainer
(progress bar, logger, checkpointing and summary off) <= 1.04x the plain loop's time per step;
defaults on (progress bar, logger, checkpoint) <= 1.08x. The time per step is that of steps
``WARMUP`` to ``STEPS``, timed alike in every loop (the same call at the top of each step); what
``fit`` spends outside its steps (set-up, teardown) is printed beside it. Also "Trainer ready": a
fresh interpreter that imports fulmen and constructs a Trainer, against one that imports torch alone
(goal: within 100 ms), and `import fulmen` alone against a bare interpreter (goal: < 50 ms, no
torch imported). Prints the figures; asserts nothing about time.

    .venv/bin/python tests/benchmarks/trainer_overhead.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

STEPS, BATCH, SAMPLES, REPEATS, WARMUP = 3000, 64, 32_000, 16, 100


class Window:
    """Times steps WARMUP to STEPS: ``tick()`` at the top of every step, in every loop alike."""

    def __init__(self) -> None:
        self.count = 0
        self.start = self.end = 0.0

    def tick(self) -> None:
        self.count += 1
        if self.count == WARMUP:
            self.start = time.perf_counter()
        elif self.count == STEPS:
            self.end = time.perf_counter()

    def per_step(self) -> float:
        return (self.end - self.start) / (STEPS - WARMUP)


def make_loader() -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, 32, generator=g)
    y = (x[:, 0] > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)


def make_net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))


def plain(loader: DataLoader) -> float:
    """Seconds per step of the plain loop."""
    model = make_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    window, step = Window(), 0
    while step < STEPS:
        for x, y in loader:
            window.tick()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == STEPS:
                break
    return window.per_step()


def plain_closure(loader: DataLoader) -> float:
    """The plain loop written to Lightning's protocol: the forward, zero_grad and backward run
    in a closure that ``optimizer.step(closure)`` calls, as the Trainer steps every optimizer
    (``fulmen.trainer.step.AutomaticStep``)."""
    model = make_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    window, step = Window(), 0
    while step < STEPS:
        for x, y in loader:
            window.tick()

            def closure(x: torch.Tensor = x, y: torch.Tensor = y) -> torch.Tensor:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                return loss

            optimizer.step(closure)
            step += 1
            if step == STEPS:
                break
    return window.per_step()


def fulmen_fit(loader: DataLoader, lean: bool, root: str) -> tuple[float, float]:
    """Seconds per step of ``Trainer.fit``, and the seconds it spent outside those steps."""
    import fulmen

    window = Window()

    class Tiny(fulmen.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = make_net()

        def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
            window.tick()
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.net(x), y)
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.SGD(self.parameters(), lr=0.1)

    flags = dict(enable_progress_bar=False, enable_checkpointing=False,
                 enable_model_summary=False, logger=False) if lean else {}
    trainer = fulmen.Trainer(max_steps=STEPS, default_root_dir=root, num_sanity_val_steps=0,
                             **flags)
    start = time.perf_counter()
    trainer.fit(Tiny(), loader)
    total = time.perf_counter() - start
    return window.per_step(), total - window.per_step() * STEPS


def startup() -> dict[str, float]:
    """Best of 10 interleaved fresh interpreters each: seconds from starting the interpreter to
    the end of its code (not to its exit, which a process that built a Trainer reaches sooner:
    see fulmen.quick_exit)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    codes = {"bare": "pass", "fulmen": "import fulmen, sys; assert 'torch' not in sys.modules",
             "torch": "import torch",
             "ready": "import fulmen; fulmen.Trainer(logger=False, enable_progress_bar=False)"}
    best = dict.fromkeys(codes, float("inf"))
    for _ in range(10):
        for name, code in codes.items():
            t0 = time.time()
            script = f"{code}\nimport time; print(time.time())"
            done = subprocess.run([sys.executable, "-c", script], check=True, env=env,
                                  capture_output=True, text=True)
            best[name] = min(best[name], float(done.stdout.split()[-1]) - t0)
    return best


def main() -> None:
    torch.set_num_threads(1)
    loader = make_loader()
    plain(loader)  # warm-up
    rows: dict[str, list[float]] = {"plain": [], "closure": [], "lean": [], "defaults": []}
    outside: dict[str, list[float]] = {"lean": [], "defaults": []}

    def fit(name: str, lean: bool, root: str) -> float:
        per_step, rest = fulmen_fit(loader, lean, root)
        outside[name].append(rest)
        return per_step

    with tempfile.TemporaryDirectory() as root:
        runs = {"plain": lambda: plain(loader), "closure": lambda: plain_closure(loader),
                "lean": lambda: fit("lean", True, root),
                "defaults": lambda: fit("defaults", False, root)}
        # interleaved, so drift hits all of them alike, and every other round in the reverse
        # order, so none of them always runs first
        for i in range(REPEATS):
            for name in list(runs) if i % 2 == 0 else reversed(list(runs)):
                rows[name].append(runs[name]())
    print(f"tiny MLP, {STEPS} steps (timed: {WARMUP} to {STEPS}), batch {BATCH}, 1 thread; "
          f"ratios: median over {REPEATS} rounds of each round's time per step / that round's "
          "plain loop's; stdout is "
          f"{'a terminal' if sys.stdout.isatty() else 'not a terminal (no bars)'}")
    for name, goal in (("plain", None), ("closure", None), ("lean", 1.04), ("defaults", 1.08)):
        t = statistics.median(rows[name])
        ratio = statistics.median(r / p for r, p in zip(rows[name], rows["plain"]))
        goal_text = f" (goal <= {goal:.2f}x)" if goal else ""
        if name == "closure":
            goal_text = " (plain loop through optimizer.step(closure), Lightning's protocol)"
        if name in outside:
            goal_text += (f"; fit() outside its {STEPS} steps (set-up, teardown): "
                          f"{statistics.median(outside[name]) * 1e3:.1f} ms")
        print(f"  {name:<9} {t * 1e6:7.1f} us/step  {ratio:5.3f}x{goal_text}")
    best = startup()
    ms = {name: seconds * 1000 for name, seconds in best.items()}
    print(f"import fulmen: {ms['fulmen'] - ms['bare']:.0f} ms over a bare interpreter, no torch "
          f"imported (goal < 50 ms); Trainer ready (import fulmen + Trainer()): "
          f"{ms['ready']:.0f} ms vs import torch {ms['torch']:.0f} ms -> "
          f"{ms['ready'] - ms['torch']:+.0f} ms (goal <= +100 ms); best of 10 each")


if __name__ == "__main__":
    main()
