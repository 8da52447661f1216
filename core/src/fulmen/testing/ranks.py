"""What the ranks of a two-process run reported, and where they were when it stopped.

Each rank's ``rank<N>.jsonl`` (written by :mod:`fulmen.testing.distributed`) holds its phases,
the strategy calls it entered and left, the hooks it reached and the errors it saw. From those
alone, :func:`stopped` says which clause broke, on which ranks, at which line, and why — a
hint computed from what the ranks did, not a fixed text. No torch here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fulmen.testing.record import read

COLLECTIVES = ("barrier", "broadcast", "all_gather", "reduce", "reduce_boolean_decision",
               "start_agreement")
#: collectives whose result the caller uses (None is never a valid one)
VALUED = ("broadcast", "all_gather", "reduce", "reduce_boolean_decision", "start_agreement")
#: the kit's phase (prefix) -> the clause a rank that stopped there breaks
PHASES = (("trainer: composing", "strategy.processes"),
          ("trainer: collectives", "strategy.collectives"),
          ("trainer: checkpoint", "strategy.trainer_processes"),
          ("trainer: teardown", "strategy.trainer_processes"),
          ("lite: composing", "strategy.lite_processes"),
          ("lite: launch", "strategy.lite_processes"),
          ("lite: training loop", "strategy.lite_processes"),
          ("lite: collectives", "strategy.collectives"),
          ("lite: no_backward_sync", "strategy.no_backward_sync"),
          ("lite: done", "strategy.lite_processes"))


@dataclass
class Rank:
    """One rank's reports."""

    rank: int
    events: list[dict[str, Any]]
    phase: str = ""
    hook: str = ""
    open: list[dict[str, Any]] = field(default_factory=list)  # calls entered, not left
    errors: list[dict[str, Any]] = field(default_factory=list)
    returned: list[dict[str, Any]] = field(default_factory=list)  # (enter, return) pairs
    defined: dict[str, str] = field(default_factory=dict)

    @property
    def silent(self) -> bool:
        return not self.events

    def reported(self, phase: str, event: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("phase") == phase
                     and e.get("event") == event), None)

    def setup_environment(self) -> dict[str, Any] | None:
        """The last return of ``setup_environment`` (``process_group``, ``world_size``)."""
        found = [e for e in self.events if e.get("event") == "return"
                 and e.get("call") == "setup_environment"]
        return found[-1] if found else None


def read_ranks(folder: Path, world: int) -> dict[int, Rank]:
    out: dict[int, Rank] = {}
    for r in range(world):
        state = out[r] = Rank(r, read(folder / f"rank{r}.jsonl"))
        for e in state.events:
            kind = e.get("event")
            if kind == "phase":
                state.phase = e["phase"]
            elif kind == "hook":
                state.hook = e["hook"]
            elif kind == "members":
                state.defined.update({k: v for k, v in e["defined"].items() if v})
            elif kind == "enter":
                state.open.append(e)
            elif kind in ("return", "raise"):
                for i in range(len(state.open) - 1, -1, -1):
                    if state.open[i]["call"] == e["call"]:
                        state.returned.append({**state.open.pop(i), "left": e["t"],
                                               "how": kind, "result": e.get("result")})
                        break
                if kind == "raise":
                    state.errors.append(e)
            elif kind == "error":
                state.errors.append(e)
    return out


def clause_of(state: Rank) -> str:
    """The clause a rank that stopped here breaks: an open collective names itself, an open
    ``setup_environment`` is the process group, else the kit's phase."""
    if state.open:
        call = state.open[-1]["call"]
        if call in COLLECTIVES:
            return "strategy.collectives"
        if call == "setup_environment":
            return "strategy.processes"
    if state.phase.startswith("trainer: fit"):
        joined = any(e.get("event") == "joined" for e in state.events)
        return "strategy.trainer_processes" if joined else "strategy.processes"
    for prefix, clause in PHASES:
        if state.phase.startswith(prefix):
            return clause
    return "strategy.processes"


def call_text(e: dict[str, Any]) -> str:
    return f"{e['call']}({e.get('args', '')[1:-1].rstrip(',') if e.get('args') else ''})"


def position(state: Rank, now: float) -> str:
    """Where a rank was: its open call (with how long, who called it), else its phase."""
    if state.silent:
        return f"rank {state.rank} never reported (no line from it: it was never started, or " \
               "died before the kit's first line)"
    where = f"phase '{state.phase}'" + (f", last hook {state.hook}" if state.hook else "")
    if state.open:
        e = state.open[-1]
        defined = state.defined.get(e["call"], "")
        return (f"rank {state.rank} never returned from {call_text(e)} (entered "
                f"{now - e['t']:.0f} s before the end, called at {e.get('caller', '?')}"
                + (f"; {e['call']} is defined at {defined}" if defined else "")
                + f"), {where}")
    return f"rank {state.rank} was in {where}, in no strategy call"


def hint_for(states: dict[int, Rank], world: int) -> tuple[str, str]:
    """(hint, where) from what every rank did."""
    waiting = {r: s.open[-1] for r, s in states.items() if s.open
               and s.open[-1]["call"] in COLLECTIVES}
    # A collective other ranks left while this rank is still inside it (the k-th call of the
    # same collective with the same arguments): it did not wait for every rank.
    def count(s: Rank, e: dict[str, Any], returned: bool) -> int:
        pool = s.returned if returned else [*s.returned, *s.open]
        return sum(1 for x in pool if x["call"] == e["call"] and x.get("args") == e.get("args")
                   and (not returned or x["how"] == "return"))

    for r, e in waiting.items():
        k = count(states[r], e, False)
        early = [o for o, s in states.items() if o != r and count(s, e, True) >= k]
        if early:
            where = states[r].defined.get(e["call"], "")
            return (f"{call_text(e)} returned on rank(s) {early} while rank {r} still waits "
                    f"in it: every rank must enter {e['call']}, and it may return only when "
                    "all have (look for a rank condition, such as 'if self.global_rank == 0', "
                    "around the collective)", where)
    # A collective that returned nothing, and the caller that needed its result failed.
    empty = [(r, x) for r, s in sorted(states.items()) for x in s.returned
             if x["call"] in VALUED and x["how"] == "return" and x.get("result") == "None"]
    if empty:
        ranks = sorted({r for r, _ in empty})
        r, x = empty[0]
        return (f"{call_text(x)} returned None on rank(s) {ranks} (called at "
                f"{x.get('caller', '?')}): {x['call']} must return its result on every rank",
                states[r].defined.get(x["call"], ""))
    # Ranks waiting in different collectives: one rank skipped or added a call.
    calls = {r: call_text(e) for r, e in waiting.items()}
    if len(set(calls.values())) > 1 or (waiting and len(waiting) < world):
        others = [f"rank {r} in {calls[r]}" if r in calls else f"rank {r} in no collective "
                  f"(phase '{states[r].phase}')" for r in sorted(states)]
        first = next(iter(waiting.values()))
        return ("the ranks are not in the same collective (" + ", ".join(others) + "): a "
                "collective that some ranks skip or call more often leaves the others "
                "waiting", states[next(iter(waiting))].defined.get(first["call"], ""))
    # setup_environment returned without a process group although several processes run.
    no_group = [r for r, s in states.items() if (ret := s.setup_environment()) is not None
                and not ret.get("process_group") and int(ret.get("world_size") or 1) > 1]
    if no_group:
        where = states[no_group[0]].defined.get("setup_environment", "")
        return (f"setup_environment returned on rank(s) {no_group} without a torch.distributed "
                f"process group although the world size is {world}: an override that does not "
                "call super().setup_environment() never starts the group (nor claims the "
                "device)", where)
    errors = [(r, e) for r, s in sorted(states.items()) for e in s.errors]
    if errors:
        r, e = errors[0]
        where = e.get("where", "")
        return (f"rank {r} raised {e['error']}" + (f" in {e['call']}" if e.get("call") else "")
                + ("; start from the plugin's line given" if where else ""), where)
    opened = {r: s.open[-1] for r, s in states.items() if s.open}
    if opened and all(e["call"] == "setup_environment" for e in opened.values()):
        silent = [r for r, s in states.items() if s.silent]
        return (f"rank(s) {sorted(opened)} wait in setup_environment (joining the process "
                f"group)" + (f" for rank(s) {silent}, which never started: the launcher "
                             "(create_launcher) did not start them" if silent else
                             ": the ranks disagree on the address, port or world size"),
                states[next(iter(opened))].defined.get("setup_environment", ""))
    silent = [r for r, s in states.items() if s.silent]
    if silent:
        return (f"rank(s) {silent} never started: the strategy declares world size {world} for "
                "devices=2, so its launcher (create_launcher) must start the other processes, "
                "or its record must say max_devices=1", "")
    return ("", "")


def stopped(states: dict[int, Rank], world: int, failure: str) -> dict[str, Any]:
    """The verdict for a run that ended with ``failure`` (a timeout or an exit status): the
    clause, detail, hint, where and ranks."""
    now = max([e["t"] for s in states.values() for e in s.events] + [time.time()])
    stuck = [r for r, s in sorted(states.items()) if s.open or s.errors or s.silent]
    if not stuck:
        stuck = sorted(states)
    # The clause of the rank that is furthest behind decides: the others may wait on it.
    clause = next((clause_of(states[r]) for r in stuck if states[r].open
                   and states[r].open[-1]["call"] in COLLECTIVES), None) \
        or clause_of(states[stuck[0]])
    hint, where = hint_for(states, world)
    if hint.startswith("setup_environment returned"):  # the process group is what broke
        clause = "strategy.processes"
    elif " returned None on rank(s) " in hint:  # a collective broke what called it
        clause = "strategy.collectives"
    positions = "; ".join(position(states[r], now) for r in sorted(states))
    errors = [f"rank {r} raised {e['error']}" for r, s in sorted(states.items())
              for e in s.errors[:1]]
    head = failure.split(";")[0] if failure.startswith("timed out") else \
        failure.split(":")[0]
    explained = errors or any(s.open for s in states.values())
    output = "" if explained else f" (last output: {failure.split(':', 1)[-1].strip()})"
    detail = f"{head}{output}: " + "; ".join([*errors, positions])
    return {"clause": clause, "detail": detail, "hint": hint or crash_hint(failure, clause),
            "where": where, "ranks": stuck}


def crash_hint(failure: str, clause: str) -> str:
    """A hint from a failure text alone (a run whose ranks wrote nothing that explains it)."""
    if failure.startswith("timed out"):
        return (f"nothing returned before the timeout while checking {clause}; the output "
                "quoted is the last the processes printed")
    return f"the check process ended abnormally while checking {clause}; see its last output"
