"""``seed_everything``: one seed for python, numpy, torch and dataloader workers."""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

_MAX = np.iinfo(np.uint32).max
log = logging.getLogger("fulmen")


def seed_everything(seed: int | None = None, workers: bool = False, verbose: bool = True) -> int:
    """Seed ``random``, ``numpy`` and ``torch`` (all devices) and return the seed.

    ``seed=None`` reads ``FULMEN_GLOBAL_SEED`` (or Lightning's ``PL_GLOBAL_SEED``), else picks 0
    and warns. ``workers=True`` also makes every dataloader worker derive its own seed from it
    (set through ``FULMEN_SEED_WORKERS`` so the Trainer and Lite install
    :func:`pl_worker_init_function` on loaders that have none). Spawned processes inherit the
    seed through the environment. ``verbose`` logs the seed set.
    """
    from fulmen.errors import ConfigurationError
    from fulmen.utilities.rank_zero import get_rank, rank_prefixed_message, rank_zero_warn

    if seed is None:
        given = os.environ.get("FULMEN_GLOBAL_SEED", os.environ.get("PL_GLOBAL_SEED"))
        if given is None:
            seed = 0
            if verbose:
                rank_zero_warn(f"No seed found, seed set to {seed}")
        else:
            try:
                seed = int(given)
            except ValueError:
                raise ConfigurationError(f"Invalid seed specified via FULMEN_GLOBAL_SEED: "
                                         f"{given!r}; use an int from 0 to {_MAX}") from None
    elif not isinstance(seed, bool) and isinstance(seed, float | np.integer | str):
        try:
            seed = int(seed)
        except ValueError:
            seed = None  # reported below
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX:
        raise ConfigurationError(f"seed_everything(seed={seed!r}): {seed} is not in bounds, a "
                                 f"seed is an int from 0 to {_MAX}")
    if verbose:
        log.info(rank_prefixed_message(f"Seed set to {seed}", get_rank()))
    os.environ["FULMEN_GLOBAL_SEED"] = str(seed)
    os.environ["FULMEN_SEED_WORKERS"] = str(int(workers))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    return seed


def reset_seed() -> None:
    """Seed again with what :func:`seed_everything` last set (nothing if it never ran)."""
    seed = os.environ.get("FULMEN_GLOBAL_SEED")
    if seed is None:
        return
    workers = os.environ.get("FULMEN_SEED_WORKERS", "0")
    seed_everything(int(seed), workers=bool(int(workers)), verbose=False)


@contextmanager
def isolate_rng(include_cuda: bool = True) -> Iterator[None]:
    """Restore the random states of python, numpy and torch (and CUDA) on exit, so what runs
    inside does not change the random numbers drawn after."""
    states = rng_states()
    cuda = torch.cuda.get_rng_state_all() if include_cuda and torch.cuda.is_available() \
        else None
    try:
        yield
    finally:
        set_rng_states({k: v for k, v in states.items() if k != "cuda"})
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def pl_worker_init_function(worker_id: int, rank: int | None = None) -> None:
    """Seed a dataloader worker from the process's seed, its id and the process rank, so
    workers and processes never share random streams (Lightning's name for it)."""
    from fulmen.utilities.rank_zero import current_rank

    global_rank = rank if rank is not None else current_rank()
    base = torch.initial_seed() - worker_id  # the loader adds the worker id; back it out
    sequence = np.random.SeedSequence([base % (1 << 64), worker_id, global_rank])
    torch_seed, py_hi, py_lo = (int(s) for s in sequence.generate_state(3, dtype=np.uint64))
    torch.manual_seed(torch_seed)
    random.seed((py_hi << 64) | py_lo)
    np.random.seed(sequence.generate_state(4))


worker_init_fn = pl_worker_init_function  # fulmen's earlier name for it


def rng_states() -> dict[str, Any]:
    """Every random state as data that loads with ``weights_only=True``."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    python = random.getstate()
    states: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
                  "pos": pos, "has_gauss": has_gauss, "cached_gaussian": gauss},
        # one tensor, not 625 ints: a checkpoint pickles it as one record
        "python": {"version": python[0], "state": torch.tensor(python[1], dtype=torch.int64),
                   "gauss": python[2]},
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
    # a tensor; a list in checkpoints written before 2026-11-26
    random.setstate((p["version"], tuple(torch.as_tensor(p["state"]).tolist()), p["gauss"]))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def configure_determinism(deterministic: bool | str | None, benchmark: bool | None) -> None:
    """``Trainer(deterministic=..., benchmark=...)``: torch's deterministic algorithms (``"warn"``:
    warn instead of raising) and ``torch.backends.cudnn.benchmark`` (None: left alone)."""
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=deterministic == "warn")
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if benchmark is not None:
        torch.backends.cudnn.benchmark = benchmark
