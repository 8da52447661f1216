"""Every rank's random state in a checkpoint, and which one each rank restores.

A checkpoint's ``rng_states`` holds the random states (torch CPU, CUDA when initialised,
NumPy, Python ``random``) of the process that wrote it, rank 0. Ranks seeded differently
(``seed_everything(seed + rank)``, per-rank dropout or augmentation) draw different streams, so
the Trainer also records every rank's: ``rng_states_per_rank`` is a list indexed by global rank,
each entry ``{"rng_states": ..., "epoch_rng": ...}`` (``epoch_rng``: the state the running epoch
started from, which a mid-epoch resume replays the data loader from). They are gathered once at
save time (one all-gather of small CPU byte tensors, never per step). A single file holds the
list; a DCP directory holds each entry as ``rng/rank_<r>.pt``, written by that rank. The
manifest records how many ranks' states the checkpoint holds (``rng_ranks``).

On resume (:func:`select`), each rank takes its own entry:

- on the same world size, every rank continues its own streams (bit-exact resume);
- on a smaller world size, the ranks that remain continue their own; the states of the others
  are not used;
- on a larger world size, a rank the checkpoint has no state for is seeded from the global
  seed plus its rank (``FULMEN_GLOBAL_SEED``, as :func:`fulmen.seed_everything` set it; 0 when
  it never ran), with a log line;
- a checkpoint written before per-rank states (no ``rng_states_per_rank``) gives every rank
  the saved ``rng_states``, as before.
"""

from __future__ import annotations

import io
import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy

#: The checkpoint key of the per-rank list.
KEY = "rng_states_per_rank"
#: The manifest fact: how many ranks' random states the checkpoint holds.
MANIFEST_KEY = "rng_ranks"
log = logging.getLogger("fulmen")


def own(loop_state: dict[str, Any] | None = None,
        states: dict[str, Any] | None = None) -> dict[str, Any]:
    """This process's entry: its random states now (``states`` when the caller has just taken
    them: one object, written once) and, when the fit loop is inside an epoch, the state that
    epoch started from."""
    from fulmen.seed import rng_states

    entry: dict[str, Any] = {"rng_states": rng_states() if states is None else states}
    if loop_state and loop_state.get("epoch_rng") is not None:
        entry["epoch_rng"] = loop_state["epoch_rng"]
    return entry


def _to_bytes(value: Any) -> Any:
    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)


def _from_bytes(data: Any) -> Any:
    import torch

    return torch.load(io.BytesIO(data.cpu().numpy().tobytes()), weights_only=True)


def gather(strategy: Strategy, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's ``entry``, by global rank (every rank calls this; two all-gathers of byte
    tensors: their lengths, then the padded bytes)."""
    import torch

    if strategy.world_size == 1:  # nothing to gather, nothing to serialize
        return [entry]
    data = _to_bytes(entry)
    sizes = strategy.all_gather(torch.tensor([data.numel()], dtype=torch.int64))
    sizes = sizes.reshape(-1).cpu()
    padded = torch.zeros(int(sizes.max()), dtype=torch.uint8)
    padded[: data.numel()] = data
    parts = strategy.all_gather(padded).reshape(sizes.numel(), -1).cpu()
    return [_from_bytes(parts[r, : int(n)]) for r, n in enumerate(sizes.tolist())]


def record(checkpoint: dict[str, Any], strategy: Strategy,
           loop_state: dict[str, Any] | None) -> None:
    """Add every rank's random states to ``checkpoint`` (and their count to its manifest).
    Every rank calls this, at save time."""
    from fulmen.checkpoint import manifest

    states = gather(strategy, own(loop_state, checkpoint.get("rng_states")))
    checkpoint[KEY] = states
    facts = checkpoint.get(manifest.KEY)
    if isinstance(facts, dict):
        facts[MANIFEST_KEY] = len(states)


def reseeded(seed: int) -> dict[str, Any]:
    """The random states :func:`fulmen.seed.seed_everything` (``seed``) gives, without changing
    this process's."""
    import random

    import numpy as np
    import torch

    from fulmen.seed import isolate_rng, rng_states

    with isolate_rng():
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        return rng_states()


def select(content: dict[str, Any], rank: int, world_size: int) -> dict[str, Any]:
    """``content`` (a loaded checkpoint) with ``rng_states`` (and the fit loop's ``epoch_rng``)
    replaced by rank ``rank``'s own, following the rule in this module's docstring."""
    states = content.get(KEY)
    if not isinstance(states, list) or not states or "rng_states" not in content:
        return content
    saved = len(states)
    if rank < saved:
        entry = states[rank]
    else:
        seed = int(os.environ.get("FULMEN_GLOBAL_SEED", "0")) + rank
        state = reseeded(seed)
        entry = {"rng_states": state, "epoch_rng": state}
        log.info("[rank: %d] the checkpoint holds the random states of %d rank(s); rank %d "
                 "has none saved and is seeded with %d (global seed + rank)",
                 rank, saved, rank, seed)
    if rank == 0 and saved > world_size:
        log.info("the checkpoint holds the random states of %d ranks; this run has %d: ranks "
                 "%d to %d are not resumed, their random states are not used", saved,
                 world_size, world_size, saved - 1)
    content["rng_states"] = entry["rng_states"]
    fit = content.get("loops", {}).get("fit") if isinstance(content.get("loops"), dict) \
        else None
    if isinstance(fit, dict) and "epoch_rng" in fit and "epoch_rng" in entry:
        fit["epoch_rng"] = entry["epoch_rng"]
    return content
