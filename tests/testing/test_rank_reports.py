"""How the kit reads a stopped two-process run from the ranks' own reports (fulmen.testing.ranks):
the clause, the ranks, the line and a hint computed from what each rank did. Synthetic rank
files here; the real runs are in test_conformance_not_fooled.py."""

from __future__ import annotations

import json
from pathlib import Path

from fulmen.testing.ranks import read_ranks, stopped

DEFINED = {"barrier": "acme/strategy.py:12", "broadcast": "acme/strategy.py:20",
           "setup_environment": "acme/strategy.py:30"}


def write(folder: Path, rank: int, *events: dict) -> None:
    lines = [{"t": 0.0, "event": "members", "defined": DEFINED}, *events]
    (folder / f"rank{rank}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))


def enter(call: str, t: float, args: str = "") -> dict:
    return {"t": t, "event": "enter", "call": call, "args": args, "caller": "kit.py:1"}


def leave(call: str, t: float, **extra: object) -> dict:
    return {"t": t, "event": "return", "call": call, "result": "None", **extra}


def phase(name: str, t: float) -> dict:
    return {"t": t, "event": "phase", "phase": name}


def test_a_barrier_that_returns_on_one_rank_while_the_other_waits(tmp_path):
    write(tmp_path, 0, phase("trainer: collectives", 1), enter("barrier", 2, "('x',)"))
    write(tmp_path, 1, phase("trainer: collectives", 1), enter("barrier", 3, "('x',)"),
          leave("barrier", 3.1), phase("trainer: checkpoint", 4))
    verdict = stopped(read_ranks(tmp_path, 2), 2, "timed out after 45 s and was killed; output")
    assert verdict["clause"] == "strategy.collectives"
    assert verdict["where"] == "acme/strategy.py:12" and verdict["ranks"] == [0]
    assert "barrier('x') returned on rank(s) [1] while rank 0 still waits" in verdict["hint"]
    assert "rank 0 never returned from barrier('x')" in verdict["detail"]
    assert verdict["detail"].startswith("timed out after 45 s and was killed: ")


def test_ranks_in_different_collectives(tmp_path):
    write(tmp_path, 0, enter("broadcast", 2, "(1, 0)"))
    write(tmp_path, 1, enter("barrier", 2, "('y',)"))
    verdict = stopped(read_ranks(tmp_path, 2), 2, "timed out after 9 s and was killed; out")
    assert verdict["clause"] == "strategy.collectives"
    assert "rank 0 in broadcast(1, 0), rank 1 in barrier('y')" in verdict["hint"]


def test_setup_environment_without_a_process_group(tmp_path):
    for rank in (0, 1):
        write(tmp_path, rank, phase("trainer: fit", 1), enter("setup_environment", 2),
              leave("setup_environment", 2.5, process_group=False, world_size=2),
              {"t": 3, "event": "error", "error": "ValueError: Default process group has not "
               "been initialized", "where": "torch/distributed/distributed_c10d.py:1"})
    verdict = stopped(read_ranks(tmp_path, 2), 2, "the check process exited with status 1: x")
    assert verdict["clause"] == "strategy.processes"
    assert verdict["where"] == "acme/strategy.py:30"
    assert "without a torch.distributed process group" in verdict["hint"]
    assert "rank 0 raised ValueError: Default process group" in verdict["detail"]


def test_a_collective_that_returned_none_to_its_caller(tmp_path):
    write(tmp_path, 0, phase("trainer: fit", 1), enter("broadcast", 2, "('/tmp/x',)"),
          leave("broadcast", 2.1),
          {"t": 3, "event": "error", "error": "TypeError: int() argument ... 'NoneType'"})
    write(tmp_path, 1, phase("trainer: fit", 1))
    verdict = stopped(read_ranks(tmp_path, 2), 2, "the check process exited with status 1: x")
    assert verdict["clause"] == "strategy.collectives"
    assert "broadcast('/tmp/x') returned None on rank(s) [0]" in verdict["hint"]


def test_a_rank_that_never_started(tmp_path):
    write(tmp_path, 0, phase("trainer: fit", 1), enter("setup_environment", 2))
    verdict = stopped(read_ranks(tmp_path, 2), 2, "timed out after 9 s and was killed; out")
    assert verdict["clause"] == "strategy.processes" and 1 in verdict["ranks"]
    assert "rank 1 never reported" in verdict["detail"]
    assert "never started: the launcher (create_launcher) did not start them" in verdict["hint"]
