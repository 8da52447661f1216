"""Every rank's random state in a checkpoint (issues 16 and 18), in one process: what a save
gathers, which entry each rank restores on the same, a smaller and a larger world size, and
where an interrupted epoch goes on when the world size changes (the multi-process runs are in
tests/integration/test_resume_ddp.py and test_checkpoint_portability.py)."""

from __future__ import annotations

import copy
import logging
import random
from typing import Any

import numpy as np
import pytest
import torch

from fulmen.checkpoint import manifest, rng
from fulmen.seed import rng_states, set_rng_states
from fulmen.trainer.progress import rescale


class Gathering:
    """A stand-in for ``world`` ranks' ``all_gather``: rank ``r``'s tensor is ``mine`` with
    its bytes (or numbers) from ``others[r]``."""

    def __init__(self, others: list[dict[str, Any]]) -> None:
        self.others = others
        self.calls = 0

    @property
    def world_size(self) -> int:
        return len(self.others)

    def all_gather(self, tensor: torch.Tensor, sync_grads: bool = False) -> torch.Tensor:
        self.calls += 1
        encoded = [rng._to_bytes(entry) for entry in self.others]
        if tensor.dtype == torch.int64:
            return torch.tensor([[e.numel()] for e in encoded])
        out = torch.zeros(len(encoded), tensor.numel(), dtype=torch.uint8)
        for r, data in enumerate(encoded):
            out[r, : data.numel()] = data
        return out


def entry(seed: int) -> dict[str, Any]:
    state = rng.reseeded(seed)
    return {"rng_states": state, "epoch_rng": rng.reseeded(seed + 100)}


def checkpoint(world_size: int, ranks: int) -> dict[str, Any]:
    entries = [entry(r) for r in range(ranks)]
    return {"rng_states": entries[0]["rng_states"], rng.KEY: entries,
            "loops": {"fit": {"epoch_rng": entries[0]["epoch_rng"]}},
            manifest.KEY: {"world_size": world_size, rng.MANIFEST_KEY: ranks}}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return torch.equal(a["torch"], b["torch"]) and \
        torch.equal(a["numpy"]["keys"], b["numpy"]["keys"]) and \
        torch.equal(a["python"]["state"], b["python"]["state"])


def test_record_gathers_every_rank_once() -> None:
    others = [entry(0), entry(1), entry(2)]
    strategy = Gathering(others)
    saved: dict[str, Any] = {manifest.KEY: {"world_size": 3}}
    rng.record(saved, strategy, {"epoch_rng": others[0]["epoch_rng"]})  # type: ignore[arg-type]
    assert strategy.calls == 2  # the lengths, then the bytes: never more
    assert saved[manifest.KEY][rng.MANIFEST_KEY] == 3
    for got, want in zip(saved[rng.KEY], others):
        assert same(got["rng_states"], want["rng_states"])
        assert same(got["epoch_rng"], want["epoch_rng"])


def test_record_in_one_process_is_this_process_state() -> None:
    class One:
        """One process: nothing is gathered (a gather would fail the test)."""

        world_size = 1

        def all_gather(self, tensor: torch.Tensor, sync_grads: bool = False) -> torch.Tensor:
            raise AssertionError("one process gathers nothing")

    torch.manual_seed(5)
    saved: dict[str, Any] = {}
    rng.record(saved, One(), {})  # type: ignore[arg-type]
    assert len(saved[rng.KEY]) == 1 and "epoch_rng" not in saved[rng.KEY][0]
    assert same(saved[rng.KEY][0]["rng_states"], rng_states())


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_same_world_size_each_rank_restores_its_own(rank: int) -> None:
    saved = checkpoint(3, 3)
    own = copy.deepcopy(saved[rng.KEY][rank])
    loaded = rng.select(saved, rank, 3)
    assert same(loaded["rng_states"], own["rng_states"])
    assert same(loaded["loops"]["fit"]["epoch_rng"], own["epoch_rng"])


def test_smaller_world_size_drops_the_others(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="fulmen"):
        loaded = rng.select(checkpoint(3, 3), 1, 2)
    assert same(loaded["rng_states"], entry(1)["rng_states"])
    assert "ranks 2 to 2 are not resumed" not in caplog.text  # only rank 0 says it
    with caplog.at_level(logging.INFO, logger="fulmen"):
        rng.select(checkpoint(3, 3), 0, 2)
    assert "ranks 2 to 2 are not resumed" in caplog.text


def test_larger_world_size_seeds_new_ranks_from_global_seed_plus_rank(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("FULMEN_GLOBAL_SEED", "40")
    before = rng_states()
    with caplog.at_level(logging.INFO, logger="fulmen"):
        loaded = rng.select(checkpoint(2, 2), 2, 3)
    assert same(rng_states(), before)  # choosing changes nothing in this process
    assert "rank 2 has none saved and is seeded with 42" in caplog.text
    set_rng_states(loaded["rng_states"])
    drawn = (torch.rand(3), np.random.rand(), random.random())
    torch.manual_seed(42)
    np.random.seed(42)
    random.seed(42)
    assert torch.equal(drawn[0], torch.rand(3))
    assert drawn[1:] == (np.random.rand(), random.random())
    assert same(loaded["loops"]["fit"]["epoch_rng"], loaded["rng_states"])


def test_older_checkpoint_gives_every_rank_its_states() -> None:
    saved = checkpoint(2, 2)
    del saved[rng.KEY]
    kept = copy.deepcopy(saved["rng_states"])
    assert same(rng.select(saved, 1, 2)["rng_states"], kept)


def in_epoch(world_size: int, done: int) -> dict[str, Any]:
    counter = {"started": done, "completed": done}
    return {manifest.KEY: {"world_size": world_size}, "loops": {"fit": {
        "progress": {"epochs": {"started": 1, "completed": 0}, "batches": counter},
        "batches_done": done}}}


@pytest.mark.parametrize(("saved", "now", "done", "start"), [
    (2, 1, 4, 8), (1, 2, 4, 2), (2, 4, 4, 2), (2, 3, 2, 1), (3, 2, 3, 4), (2, 2, 3, 3)])
def test_interrupted_epoch_goes_on_after_the_batches_consumed(saved: int, now: int, done: int,
                                                              start: int) -> None:
    fit = rescale(in_epoch(saved, done), now)["loops"]["fit"]
    assert fit["progress"]["batches"] == {"started": start, "completed": start}
    assert fit["batches_done"] == start


def test_epoch_boundary_checkpoint_is_left_alone() -> None:
    saved = in_epoch(2, 4)
    saved["loops"]["fit"]["progress"]["epochs"] = {"started": 1, "completed": 1}
    assert rescale(copy.deepcopy(saved), 3) == saved


def test_model_parallel_position_counts_data_parallel_replicas() -> None:
    """4 ranks as 2 data-parallel x 2 tensor-parallel ran 3 batches per replica (6 of the
    epoch); resumed on 3 plain ranks, each goes on after 2."""
    saved = in_epoch(4, 3)
    saved[manifest.KEY]["data_parallel_size"] = 2
    fit = rescale(saved, 3)["loops"]["fit"]
    assert fit["batches_done"] == 2


def test_python_state_is_one_tensor_and_an_older_list_still_restores() -> None:
    """Saved as one int64 tensor (one record, not 625 pickled ints); a checkpoint written
    before that holds a list, which still restores."""
    import random

    from fulmen.seed import rng_states, set_rng_states

    random.seed(7)
    states = rng_states()
    assert states["python"]["state"].dtype == torch.int64
    expected = [random.random() for _ in range(3)]
    older = {**states, "python": {**states["python"],
                                  "state": states["python"]["state"].tolist()}}
    for saved in (states, older):
        set_rng_states(saved)
        assert [random.random() for _ in range(3)] == expected
