"""Joining the process group with a deadline: every rank checks in at the main process's store,
and a rank that does not arrive within the rendezvous timeout is an error naming it — never a
wait as long as the collective timeout.

Under torchrun (``TORCHELASTIC_USE_AGENT_STORE=True``) the agent hosts the store and every rank
is a client, as in torch's own ``env://`` rendezvous; otherwise rank 0 hosts it.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch.distributed as dist

from fulmen.errors import ConfigurationError, RendezvousError

DEFAULT_SECONDS = 60.0
ENV_VARIABLE = "FULMEN_RENDEZVOUS_TIMEOUT"
_joined: dict[str, dist.Store] = {}


def group_store() -> dist.Store | None:
    """The store of the process group this process joined through :func:`join`, or None."""
    return _joined.get("store")


def resolve_timeout(given: float | timedelta | None, owner: str) -> timedelta:
    """``given`` (seconds or a timedelta), else ``FULMEN_RENDEZVOUS_TIMEOUT``, else 60 s."""
    source = f"{owner}(rendezvous_timeout={given!r})"
    if given is None:
        text = os.environ.get(ENV_VARIABLE)
        if text is None:
            return timedelta(seconds=DEFAULT_SECONDS)
        source = f"{ENV_VARIABLE}={text!r}"
        try:
            given = float(text)
        except ValueError:
            given = -1.0
    seconds = given.total_seconds() if isinstance(given, timedelta) else given
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ConfigurationError(f"{source}: the rendezvous timeout must be a positive number of "
                                 "seconds (or a timedelta), e.g. 60")
    return timedelta(seconds=float(seconds))


def join(*, address: str, port: int, rank: int, world_size: int, attempt: int,
         rendezvous_timeout: timedelta, timeout: timedelta, owner: str) -> dist.Store:
    """The store every rank of this group reached within ``rendezvous_timeout``; afterwards its
    operations wait up to ``timeout`` (the collective timeout). ``attempt``: the scheduler's
    restart count (keys are prefixed by it). ``owner`` names the strategy."""
    seconds = rendezvous_timeout.total_seconds()
    where = f"{address}:{port}"
    tips = (f"Check that all {world_size} processes were started (devices x num_nodes must "
            "match what the launcher or scheduler starts), that every process uses the same "
            f"MASTER_ADDR ({address}), MASTER_PORT ({port}) and WORLD_SIZE ({world_size}), and "
            f"that the port is open between the nodes. Waited {seconds:g} s: raise it with "
            f"{ENV_VARIABLE}=<seconds> or the strategy's rendezvous_timeout=.")
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    hosting = rank == 0 and not agent_store
    start = time.monotonic()
    try:
        store: dist.Store = dist.TCPStore(address, port, world_size, is_master=hosting,
                                          timeout=rendezvous_timeout, wait_for_workers=False,
                                          multi_tenant=hosting)
    except (dist.DistError, RuntimeError, OSError) as exc:
        what = (f"could not open the rendezvous store on port {port}" if hosting else
                f"could not reach the main process's store at {where}")
        raise RendezvousError(f"strategy {owner!r}, rank {rank} of {world_size}: {what} within "
                              f"{seconds:g} s ({type(exc).__name__}: {exc}). {tips}") from exc
    prefix = f"fulmen/rendezvous/{attempt}"
    keys = [f"{prefix}/rank{r}" for r in range(world_size)]
    try:
        store.set(keys[rank], "1")
        remaining = max(seconds - (time.monotonic() - start), 0.001)
        store.wait(keys, timedelta(seconds=remaining))
    except (dist.DistError, RuntimeError) as exc:
        try:
            missing = [r for r, key in enumerate(keys) if not store.check([key])]
            state = (f"{world_size - len(missing)} of {world_size} processes joined; missing "
                     f"rank(s): {', '.join(map(str, missing))}")
        except (dist.DistError, RuntimeError):  # the main process is gone
            state = "lost the connection to the main process's store"
        raise RendezvousError(f"strategy {owner!r}, rank {rank} of {world_size}: joining the "
                              f"process group at {where} timed out after {seconds:g} s: "
                              f"{state}. {tips}") from exc
    store.set_timeout(timeout)
    if attempt:  # a restarted job may meet its previous attempt's keys
        store = dist.PrefixStore(f"fulmen/restart{attempt}", store)
    _joined["store"] = store
    return store
