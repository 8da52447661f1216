"""``ReplicaSettings``: where this replica group stands in a torchft job, resolved from the
strategy's arguments and torchft's environment variables, and validated before any process,
server or socket starts.

Environment variables (torchft's own examples use the first three):

- ``REPLICA_GROUP_ID``: this group's index, ``0 <= id < NUM_REPLICA_GROUPS``.
- ``NUM_REPLICA_GROUPS``: how many replica groups the job has at most (shards the data).
- ``TORCHFT_LIGHTHOUSE``: the lighthouse's address (``http://host:port``).
- ``TORCHFT_LIGHTHOUSE_PORT``: the port of the lighthouse started for the user when no address
  is given (default 29510; only used when there are several groups).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from fulmen.errors import ConfigurationError

ENV_GROUP_ID = "REPLICA_GROUP_ID"
ENV_NUM_GROUPS = "NUM_REPLICA_GROUPS"
ENV_LIGHTHOUSE = "TORCHFT_LIGHTHOUSE"
ENV_LIGHTHOUSE_PORT = "TORCHFT_LIGHTHOUSE_PORT"
DEFAULT_LIGHTHOUSE_PORT = 29510
DEFAULT_JOIN, DEFAULT_HEARTBEAT = 60.0, 5.0  # torchft's lighthouse defaults (seconds)
_ADDRESS = re.compile(r"^https?://[^\s/:]+(:\d{1,5})?/?$|^https?://\[[0-9a-fA-F:.]+\](:\d{1,5})?/?$")


def majority(groups: int) -> int:
    """The smallest number of groups that is more than half of ``groups``."""
    return groups // 2 + 1


@dataclass(frozen=True)
class ReplicaSettings:
    """What one replica group needs to know about the job.

    replica_group_id: this group's index (data shard, and the name the lighthouse knows it by).
    num_replica_groups: the most groups the job runs (the data is sharded into that many parts).
    min_replicas: groups that must be in a quorum for a step to commit (default: a majority).
    lighthouse: the lighthouse's address, or None: one is started for the user (by group 0 when
        there are several groups, on ``lighthouse_port``; the others find it on localhost).
    lighthouse_port: the port of the lighthouse started for the user (several groups).
    timeout: how long a collective, a commit vote or a checkpoint transfer may take.
    quorum_timeout: how long a group waits for a quorum of ``min_replicas`` groups.
    join_timeout: how long the lighthouse waits for the previous quorum's groups to come back
        before forming a quorum without them.
    heartbeat_timeout: a group whose heartbeats stop this long is left out of the next quorum.
    """

    replica_group_id: int
    num_replica_groups: int
    min_replicas: int
    lighthouse: str | None
    lighthouse_port: int
    timeout: timedelta
    quorum_timeout: timedelta
    join_timeout: timedelta
    heartbeat_timeout: timedelta

    @property
    def starts_lighthouse(self) -> bool:
        """Whether this group starts the lighthouse (no address given, and this is group 0)."""
        return self.lighthouse is None and self.replica_group_id == 0

    @property
    def lighthouse_bind(self) -> str:
        """Where the lighthouse started for the user listens: any free port for a lone group
        (nobody else looks for it), ``lighthouse_port`` when other groups must find it."""
        return f"[::]:{self.lighthouse_port if self.num_replica_groups > 1 else 0}"

    def lighthouse_for_others(self) -> str:
        """The address a group that does not start the lighthouse connects to."""
        return self.lighthouse or f"http://localhost:{self.lighthouse_port}"

    @classmethod
    def resolve(cls, *, replica_group_id: int | None, num_replica_groups: int | None,
                min_replicas: int | None, lighthouse: str | None,
                lighthouse_port: int | None, timeout: float | timedelta,
                quorum_timeout: float | timedelta, join_timeout: float | timedelta | None,
                heartbeat_timeout: float | timedelta | None,
                environ: Mapping[str, str] | None = None) -> ReplicaSettings:
        """Arguments first, then the environment, then defaults; every problem in one error."""
        env = os.environ if environ is None else environ
        problems: list[str] = []
        groups = _integer("num_replica_groups", num_replica_groups, env, ENV_NUM_GROUPS, 1,
                          problems)
        group_id = _integer("replica_group_id", replica_group_id, env, ENV_GROUP_ID, 0,
                            problems)
        port = _integer("lighthouse_port", lighthouse_port, env, ENV_LIGHTHOUSE_PORT,
                        DEFAULT_LIGHTHOUSE_PORT, problems)
        if groups is not None and groups < 1:
            problems.append(f"num_replica_groups={groups}: a job has at least one replica "
                            "group; use 1 or more")
        if group_id is not None and groups is not None and groups >= 1 and \
                not 0 <= group_id < groups:
            problems.append(f"replica_group_id={group_id} with num_replica_groups={groups}: "
                            f"the id must be in 0..{groups - 1} (it picks this group's share "
                            f"of the data); set {ENV_GROUP_ID} per group and "
                            f"{ENV_NUM_GROUPS} to the number of groups")
        if port is not None and not 1 <= port <= 65535:
            problems.append(f"lighthouse_port={port}: a TCP port is 1..65535")
        need = min_replicas
        if need is None and groups is not None and groups >= 1:
            need = majority(groups)
        if need is not None and (isinstance(need, bool) or not isinstance(need, int)):
            problems.append(f"min_replicas={need!r}: give a whole number of replica groups")
        elif need is not None and groups is not None and groups >= 1 and not 1 <= need <= groups:
            problems.append(f"min_replicas={need} with num_replica_groups={groups}: a quorum "
                            f"needs 1..{groups} groups (a step commits only when min_replicas "
                            f"groups take part); the default is a majority, "
                            f"{majority(groups)}")
        address = lighthouse if lighthouse is not None else env.get(ENV_LIGHTHOUSE) or None
        if address is not None and not _ADDRESS.match(str(address)):
            source = "lighthouse" if lighthouse is not None else ENV_LIGHTHOUSE
            problems.append(f"{source}={address!r}: torchft's lighthouse address looks like "
                            "'http://host:29510' (scheme, host and port); leave it unset to "
                            "have one started for you")
        if address is not None:
            for name, value in (("join_timeout", join_timeout),
                                ("heartbeat_timeout", heartbeat_timeout)):
                if value is not None:
                    problems.append(
                        f"{name}={value!r} with lighthouse {address!r}: it configures the "
                        "lighthouse fulmen starts when none is given; yours takes it on its "
                        f"command line (torchft_lighthouse --{name}_ms ...)")
        durations = {}
        for name, value in (("timeout", timeout), ("quorum_timeout", quorum_timeout),
                            ("join_timeout", DEFAULT_JOIN if join_timeout is None
                             else join_timeout),
                            ("heartbeat_timeout", DEFAULT_HEARTBEAT if heartbeat_timeout is None
                             else heartbeat_timeout)):
            durations[name] = _duration(name, value, problems)
        if problems:
            raise ConfigurationError("TorchFTStrategy: " + "; ".join(problems))
        assert groups is not None and group_id is not None and port is not None
        assert need is not None
        return cls(replica_group_id=group_id, num_replica_groups=groups, min_replicas=need,
                   lighthouse=address, lighthouse_port=port, **durations)


def _integer(name: str, given: int | None, env: Mapping[str, str], variable: str,
             default: int, problems: list[str]) -> int | None:
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int):
            problems.append(f"{name}={given!r}: give a whole number")
            return None
        return given
    text = env.get(variable, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        problems.append(f"{variable}={text!r} (for {name}): not a whole number")
        return None


def _duration(name: str, value: float | timedelta, problems: list[str]) -> timedelta:
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        problems.append(f"{name}={value!r}: give a positive number of seconds or a timedelta")
        return timedelta(seconds=1)
    return timedelta(seconds=float(seconds))
