"""The collectives fulmen issues, with an optional check that every rank issues the same ones.

``FULMEN_DEBUG_DISTRIBUTED=1`` fingerprints each collective (kind, shapes, dtypes, call site)
through the process group's store before running it. A rank that calls a different collective
— the classic cause of a DDP hang — gets an error naming both call sites; a collective that
some ranks never reach within ``FULMEN_DEBUG_TIMEOUT`` seconds (default 60) gets an error
listing the ranks that never arrived, instead of hanging.
"""

from __future__ import annotations

import os
import traceback
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from fulmen import ConfigurationError, FulmenError
from fulmen_strategies import rendezvous


class CollectiveMismatchError(FulmenError):
    """Ranks called different collectives, or some never called one."""


_counter = {"n": 0}


def debug_enabled() -> bool:
    return os.environ.get("FULMEN_DEBUG_DISTRIBUTED", "") in ("1", "true", "yes")


def _call_site() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = os.path.abspath(frame.filename)
        if not path.startswith(here) and "/fulmen/" not in path.replace("\\", "/"):
            return f"{frame.filename}:{frame.lineno} ({frame.name})"
    return "unknown"


def _check(kind: str, tensor: torch.Tensor | None = None) -> None:
    if not debug_enabled():
        return
    _counter["n"] += 1
    seq = _counter["n"]
    rank, world = dist.get_rank(), dist.get_world_size()
    shape = tuple(tensor.shape) if tensor is not None else ()
    dtype = str(tensor.dtype) if tensor is not None else ""
    mine = f"{kind}|{shape}|{dtype}|{_call_site()}"
    store = rendezvous.group_store()
    if store is None:
        raise FulmenError("FULMEN_DEBUG_DISTRIBUTED=1 checks collectives through the store of "
                          "the process group fulmen joined; this process group was created "
                          "elsewhere. Unset FULMEN_DEBUG_DISTRIBUTED")
    timeout = float(os.environ.get("FULMEN_DEBUG_TIMEOUT", "60"))
    store.set(f"fulmen/collective/{seq}/{rank}", mine)
    keys = [f"fulmen/collective/{seq}/{r}" for r in range(world)]
    try:
        store.wait(keys, timedelta(seconds=timeout))
    except Exception:
        missing = [r for r, key in enumerate(keys) if not store.check([key])]
        raise CollectiveMismatchError(
            f"collective #{seq} ({kind} at {mine.rsplit('|', 1)[1]}) waited {timeout:g}s: ranks "
            f"{missing} never arrived. They are stuck elsewhere or took another code path "
            "(a collective inside an `if rank == 0:` block?)") from None
    for r, key in enumerate(keys):
        theirs = store.get(key).decode()
        if theirs != mine:
            k1, s1, d1, site1 = mine.split("|", 3)
            k2, s2, d2, site2 = theirs.split("|", 3)
            raise CollectiveMismatchError(
                f"collective #{seq} differs between ranks: rank {rank} called {k1} shape {s1} "
                f"{d1} at {site1}, rank {r} called {k2} shape {s2} {d2} at {site2}")


def all_reduce(tensor: torch.Tensor, op: Any) -> None:
    _check("all_reduce", tensor)
    dist.all_reduce(tensor, op=op)


def all_gather(tensor: torch.Tensor, world_size: int, sync_grads: bool) -> torch.Tensor:
    _check("all_gather", tensor)
    if sync_grads:
        from torch.distributed.nn.functional import all_gather as gather_with_grad

        return torch.stack(gather_with_grad(tensor))
    parts = [torch.empty_like(tensor) for _ in range(world_size)]
    dist.all_gather(parts, tensor)
    return torch.stack(parts)


def broadcast_object(obj: Any, src: int) -> Any:
    _check("broadcast")
    holder = [obj]
    dist.broadcast_object_list(holder, src=src)
    return holder[0]


def barrier(name: str | None = None) -> None:
    _check(f"barrier({name})" if name else "barrier")
    dist.barrier()


def reduce_operand(tensor: Any, reduce_op: str, device: torch.device,
                   known: Any) -> tuple[torch.Tensor, str]:
    """Check ``reduce_op`` (a key of ``known``) and return a copy of ``tensor`` on ``device`` to
    reduce in place (floating point for ``"mean"``), with the op's lower-case name."""
    op = str(reduce_op).lower()
    if op not in known:
        raise ConfigurationError(f"reduce(reduce_op={reduce_op!r}): use one of {sorted(known)}")
    value = torch.as_tensor(tensor, device=device).clone()
    if not value.is_floating_point() and op == "mean":
        value = value.float()
    return value, op
