"""Registers a fake PrivateUse1 backend named ``fakedev`` (3 devices) through torch's Python
hooks, then selects it by name in fulmen and exercises the device-module calls. No tensor math:
the fake module only records what it is asked. Prints one JSON line with what it saw."""

from __future__ import annotations

import json
import sys
import types

import torch
import torch.distributed as dist

calls: list[list] = []
fake = types.ModuleType("fakedev")
fake.device_count = lambda: 3  # type: ignore[attr-defined]
fake.is_available = lambda: True  # type: ignore[attr-defined]
fake.current_device = lambda: 0  # type: ignore[attr-defined]
fake.set_device = lambda index: calls.append(["set_device", index])  # type: ignore[attr-defined]
fake.synchronize = lambda device=None: calls.append(  # type: ignore[attr-defined]
    ["synchronize", str(device)])
fake.memory_stats = lambda device=None: {"allocated_bytes.all.current": 7}  # type: ignore
fake.empty_cache = lambda: calls.append(["empty_cache"])  # type: ignore[attr-defined]
torch.utils.rename_privateuse1_backend("fakedev")
torch._register_device_module("fakedev", fake)
if "--backend" in sys.argv:  # what a vendor package does for its collectives library
    dist.Backend.register_backend("fakeccl", lambda *a, **k: None, devices=["fakedev"])

import fulmen  # noqa: E402

lite = fulmen.Lite(accelerator="fakedev", devices=1)
acc = lite.accelerator
acc.setup_device(torch.device("fakedev", 2))
acc.synchronize()
stats = acc.memory_stats()
acc.teardown()
out = {"name": acc.name, "device_type": acc.device_type, "count": acc.auto_device_count(),
       "devices": [str(d) for d in lite.strategy.parallel_devices], "calls": calls,
       "stats": stats, "strategy": lite.strategy.name}
# The ddp family on this device type: chosen by strategy="auto" for several devices when torch
# knows a distributed backend for it, refused at composition (no process started) otherwise.
for key, strategy in (("auto_strategy", "auto"), ("ddp_backend", "ddp_spawn")):
    try:
        chosen = fulmen.Lite(accelerator="fakedev", devices=2, strategy=strategy).strategy
        out[key] = chosen.name if strategy == "auto" else chosen.backend
    except fulmen.FulmenError as exc:
        out[key.replace("strategy", "error").replace("backend", "error")] = str(exc)
print(json.dumps(out))
