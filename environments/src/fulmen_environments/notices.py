"""Cloud spot and preemption notices, read from the providers' instance-metadata endpoints.

Each notice polls its endpoint in a daemon thread (never on the training thread) on local
rank 0 of each node, and announces a stop when the provider schedules this VM's interruption:

- :class:`AWSSpotNotice`: ``/latest/meta-data/spot/instance-action`` (IMDSv2: a session token
  first); about 120 s of notice.
- :class:`GCPPreemptionNotice`: ``/computeMetadata/v1/instance/preempted`` (``TRUE`` once
  preempted); 30 s of notice.
- :class:`AzureSpotNotice`: Scheduled Events, an event of type ``Preempt``; at least 30 s.

``endpoint`` overrides where the metadata server is (a server on loopback in tests, a proxy),
as does the environment variable ``FULMEN_METADATA_ENDPOINT``. Pass one to the Trainer:
``Trainer(plugins=[AWSSpotNotice()])``.
"""

from __future__ import annotations

import email.utils
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from abc import abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import Any

from fulmen import ConfigurationError
from fulmen.api.notice import Notice, PreemptionNotice
from fulmen_environments import aws_spot, azure_spot, gcp_preemption

ENDPOINT_VARIABLE = "FULMEN_METADATA_ENDPOINT"


class MetadataNotice(PreemptionNotice):
    """Polls a metadata endpoint every ``interval`` seconds in a daemon thread; :meth:`check`
    reads it once. A request that fails (no metadata server: not on this cloud, or a network
    hiccup) is retried at the next poll; the first failure is logged once."""

    per_node = True
    #: the metadata server's address when neither ``endpoint`` nor the variable says
    default_endpoint = "http://169.254.169.254"
    #: seconds of notice the provider documents, when the endpoint does not say
    default_window: float | None = None

    def __init__(self, endpoint: str | None = None, interval: float = 2.0,
                 timeout: float = 1.0) -> None:
        if not interval > 0 or not timeout > 0:
            raise ConfigurationError(f"{type(self).__name__}(interval={interval!r}, timeout="
                                     f"{timeout!r}): both must be positive seconds")
        given = endpoint or os.environ.get(ENDPOINT_VARIABLE) or self.default_endpoint
        if not given.startswith(("http://", "https://")):
            raise ConfigurationError(f"{type(self).__name__}(endpoint={given!r}): expected an "
                                     "http:// or https:// address, such as "
                                     f"{self.default_endpoint!r}")
        self.endpoint = given.rstrip("/")
        self.interval, self.timeout = interval, timeout
        self.polls = 0  # requests answered so far (any status)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed_once = False

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (into spawned workers) without the watcher thread and its event."""
        state = dict(self.__dict__)
        state.pop("_stop")
        state["_thread"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stop = threading.Event()

    def start(self, announce: Callable[[Notice], None]) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, args=(announce,), daemon=True,
                                        name=f"fulmen-{self.name}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 1)
            self._thread = None

    def describe(self) -> str:
        return f"{self.name} (polling {self.endpoint} every {self.interval:g} s)"

    def _watch(self, announce: Callable[[Notice], None]) -> None:
        while not self._stop.is_set():
            try:
                found = self.check()
            except (OSError, ValueError) as exc:  # URLError is an OSError
                found = None
                if not self._failed_once:
                    self._failed_once = True
                    from fulmen.status import configure_logging

                    configure_logging().warning("%s: cannot read %s (%s); retrying every %g s",
                                                self.name, self.endpoint, exc, self.interval)
            if found is not None:
                announce(found)
                return
            self._stop.wait(self.interval)

    def get(self, path: str, headers: dict[str, str], method: str = "GET"
            ) -> tuple[int, str]:
        """``(status, body)`` of one request to the endpoint; a 404 is an answer, not a
        failure."""
        request = urllib.request.Request(self.endpoint + path, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                self.polls += 1
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            self.polls += 1
            return exc.code, exc.read().decode(errors="replace")

    @abstractmethod
    def check(self) -> Notice | None:
        """Read the endpoint once: the notice, or None while no interruption is scheduled."""

    def notice(self, detail: str, window: float | None) -> Notice:
        return Notice(self.name, "stop", int(signal.SIGTERM),
                      window if window is not None else self.default_window, detail)


def _seconds_until(moment: datetime) -> float:
    return max(moment.timestamp() - time.time(), 0.0)


class AWSSpotNotice(MetadataNotice):
    """EC2 spot interruption: ``instance-action`` answers 404 until AWS schedules one, then
    ``{"action": "terminate" | "stop" | "hibernate", "time": "...Z"}`` about two minutes
    ahead. Uses IMDSv2 (a token from ``PUT /latest/api/token``), falling back to IMDSv1."""

    name = aws_spot.SPEC.name  # the registered name, from the plugin's record
    default_window = 120.0

    def __init__(self, endpoint: str | None = None, interval: float = 2.0,
                 timeout: float = 1.0) -> None:
        super().__init__(endpoint, interval, timeout)
        self._token: tuple[str, float] | None = None

    def _headers(self) -> dict[str, str]:
        if self._token is None or self._token[1] < time.monotonic():
            status, body = self.get("/latest/api/token", {
                "X-aws-ec2-metadata-token-ttl-seconds": "21600"}, method="PUT")
            if status != 200:
                return {}  # IMDSv1
            self._token = (body.strip(), time.monotonic() + 21000)
        return {"X-aws-ec2-metadata-token": self._token[0]}

    def check(self) -> Notice | None:
        status, body = self.get("/latest/meta-data/spot/instance-action", self._headers())
        if status == 401:  # the token expired early: fetch a new one next time
            self._token = None
            return None
        if status != 200:
            return None
        action = json.loads(body)
        when = datetime.fromisoformat(str(action.get("time", "")).replace("Z", "+00:00")) \
            if action.get("time") else None
        window = _seconds_until(when) if when is not None else None
        return self.notice(f"spot instance-action {action.get('action', '?')} at "
                           f"{action.get('time', '?')}", window)


class GCPPreemptionNotice(MetadataNotice):
    """Compute Engine preemptible and spot VMs: ``instance/preempted`` turns ``TRUE`` when the
    VM is preempted; it is stopped 30 s later."""

    name = gcp_preemption.SPEC.name  # the registered name, from the plugin's record
    default_endpoint = "http://metadata.google.internal"
    default_window = 30.0

    def check(self) -> Notice | None:
        status, body = self.get("/computeMetadata/v1/instance/preempted",
                                {"Metadata-Flavor": "Google"})
        if status == 200 and body.strip().upper() == "TRUE":
            return self.notice("instance/preempted is TRUE", None)
        return None


class AzureSpotNotice(MetadataNotice):
    """Azure Scheduled Events: an event of type ``Preempt`` (a spot VM's eviction, at least
    30 s ahead; ``NotBefore`` says when). Other event types (reboots, redeploys) are left to
    the user."""

    name = azure_spot.SPEC.name  # the registered name, from the plugin's record
    default_window = 30.0
    event_types = ("Preempt",)

    def check(self) -> Notice | None:
        status, body = self.get("/metadata/scheduledevents?api-version=2020-07-01",
                                {"Metadata": "true"})
        if status != 200:
            return None
        for event in json.loads(body).get("Events", []):
            if event.get("EventType") in self.event_types:
                before = event.get("NotBefore") or ""
                parsed = email.utils.parsedate_to_datetime(before) if before else None
                window = _seconds_until(parsed) if parsed is not None else None
                return self.notice(f"scheduled event {event.get('EventType')} "
                                   f"{event.get('EventId', '')} not before {before or '?'}",
                                   window)
        return None
