"""``seed_everything``: one seed for python, numpy, torch and dataloader workers."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import torch

_MAX = np.iinfo(np.uint32).max


def seed_everything(seed: int | None = None, workers: bool = False) -> int:
    """Seed ``random``, ``numpy`` and ``torch`` (all devices) and return the seed.

    ``seed=None`` reads ``FULMEN_GLOBAL_SEED`` or picks 0. ``workers=True`` also makes every
    dataloader worker derive its own seed from it (set through ``FULMEN_SEED_WORKERS`` so the
    Trainer and Lite install :func:`worker_init_fn` on loaders that have none).
    """
    from fulmen.errors import ConfigurationError

    if seed is None:
        seed = int(os.environ.get("FULMEN_GLOBAL_SEED", 0))
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX:
        raise ConfigurationError(f"seed_everything(seed={seed!r}): a seed is an int from 0 to "
                                 f"{_MAX}")
    os.environ["FULMEN_GLOBAL_SEED"] = str(seed)
    os.environ["FULMEN_SEED_WORKERS"] = str(int(workers))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    return seed


def worker_init_fn(worker_id: int, rank: int | None = None) -> None:
    """Seed a dataloader worker from the global seed, its id and the process rank, so workers
    and processes never share random streams."""
    base = torch.initial_seed() if rank is None else torch.initial_seed() + rank
    sequence = np.random.SeedSequence([base % _MAX, worker_id])
    torch_seed, np_seed, py_seed = sequence.generate_state(3, dtype=np.uint64)
    torch.manual_seed(int(torch_seed))
    np.random.seed(int(np_seed) % _MAX)
    random.seed(int(py_seed))


def rng_states() -> dict[str, Any]:
    """Every random state as data that loads with ``weights_only=True``."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    python = random.getstate()
    states: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
                  "pos": pos, "has_gauss": has_gauss, "cached_gaussian": gauss},
        "python": {"version": python[0], "state": list(python[1]), "gauss": python[2]},
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict[str, Any]) -> None:
    """Restore what :func:`rng_states` returned."""
    torch.set_rng_state(states["torch"])
    n = states["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), int(n["pos"]),
                         int(n["has_gauss"]), float(n["cached_gaussian"])))
    p = states["python"]
    random.setstate((p["version"], tuple(p["state"]), p["gauss"]))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
