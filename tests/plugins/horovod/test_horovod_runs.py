"""Real ``horovodrun --gloo -np 2`` runs on CPU: training matches DDP, checkpoints resume, Lite.

Skipped (with the command that enables them) where Horovod is not built: `make install-horovod`.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def close(a: list[list[float]], b: list[list[float]], atol: float = 1e-5) -> bool:
    return all(torch.allclose(torch.tensor(x), torch.tensor(y), atol=atol) for x, y in zip(a, b))


def both_ranks(run):
    assert run.returncode == 0, run.output[-4000:]
    return run.json("rank0"), run.json("rank1")


@pytest.mark.parametrize(("flags", "horovod_only"), [
    ((), ()),
    # accumulation through the instance's backward_passes_per_step (Lite covers the default,
    # where the strategy raises it to the window it sees)
    (("--accumulate", "3", "--clip", "0.05", "--momentum", "0.9", "--scheduler"),
     ("--passes", "3")),
], ids=["plain", "accumulate-clip-momentum-scheduler"])
def test_horovodrun_trains_like_ddp(run_horovod, flags, horovod_only):
    hvd0, hvd1 = both_ranks(run_horovod("hvd_train.py", *flags, *horovod_only))
    ddp0, ddp1 = both_ranks(run_horovod("hvd_train.py", "--strategy", "ddp", "--devices", "2",
                                        *flags, np=None))
    # The layout came from horovodrun, through the horovod environment.
    assert [hvd0["rank"], hvd1["rank"]] == [0, 1]
    assert hvd0["world_size"] == hvd1["world_size"] == 2
    assert [hvd0["local_rank"], hvd1["local_rank"]] == [0, 1]
    assert hvd0["environment"] == "horovod" and hvd0["strategy"] == "horovod"
    assert {"HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK"} <= set(hvd1["env"])
    # Each rank saw its own half of the data, like under DDP.
    assert sorted(hvd0["seen"] + hvd1["seen"]) == sorted(ddp0["seen"] + ddp1["seen"])
    assert hvd0["seen"] == ddp0["seen"] and hvd1["seen"] == ddp1["seen"]
    assert not set(hvd0["seen"][:20]) & set(hvd1["seen"][:20])
    # Identical weights on both ranks (rank 0's initial weights were broadcast: each rank
    # seeded its model differently), equal to DDP's on the same data.
    assert hvd0["weights"] == hvd1["weights"]
    assert close(hvd0["weights"], ddp0["weights"])
    assert hvd0["global_step"] == ddp0["global_step"]
    assert hvd0["lr"] == ddp0["lr"]  # the scheduler still drives the wrapped optimizer
    assert hvd0["metrics"]["gathered_sum"] == 1.0  # all_gather of ranks 0 and 1
    assert abs(hvd0["metrics"]["val_acc"] - ddp0["metrics"]["val_acc"]) < 1e-6


def test_checkpoint_written_on_rank_zero_and_resumed(run_horovod):
    flags = ("--momentum", "0.9", "--scheduler")
    straight0, _ = both_ranks(run_horovod("hvd_train.py", *flags, "--epochs", "2"))
    first = run_horovod("hvd_train.py", *flags, "--epochs", "1", "--checkpoint")
    both_ranks(first)
    files = sorted(p.name for p in (first.out / "ckpt").iterdir())
    assert files == ["epoch=0-step=5.ckpt"], files
    assert (first.out / "writes.txt").read_text() == "rank 0 wrote epoch=0-step=5.ckpt\n"
    state = torch.load(first.out / "ckpt" / files[0], weights_only=True)
    assert state["optimizer_states"][0]["state"]  # momentum buffers, loadable without Horovod
    resumed0, resumed1 = both_ranks(run_horovod(
        "hvd_train.py", *flags, "--epochs", "2", "--resume", str(first.out / "ckpt" / files[0])))
    assert resumed0["global_step"] == straight0["global_step"] == 10
    assert resumed0["weights"] == resumed1["weights"]
    assert close(resumed0["weights"], straight0["weights"])
    assert resumed0["lr"] == straight0["lr"]


def test_lite_under_horovodrun_matches_lite_under_ddp(run_horovod):
    hvd0, hvd1 = both_ranks(run_horovod("hvd_lite.py"))
    ddp0, _ = both_ranks(run_horovod("hvd_lite.py", "--strategy", "ddp", "--devices", "2",
                                     np=None))
    assert hvd0["world_size"] == 2
    assert hvd0["weights"] == hvd1["weights"]
    assert close(hvd0["weights"], ddp0["weights"])
    assert hvd0["gathered"] == hvd1["gathered"] == [0.0, 1.0]
    assert hvd0["mean"] == 0.5 and hvd1["max"] == 1.0
    assert hvd1["shared"] == {"from": 0}
    assert hvd0["restored_equal"] and hvd1["restored_equal"]
    assert hvd0["rest_keys"] == ["optimizer", "step"] and hvd0["step"] == 8
    assert hvd0["momentum_saved"]
    assert "lite.ckpt" in hvd1["files"]


def test_script_not_started_by_horovodrun_says_how_to_launch(run_horovod):
    run = run_horovod("hvd_train.py", "--devices", "2", np=None, timeout=120)
    assert run.returncode != 0
    assert "ConfigurationError" in run.output
    assert "horovodrun -np 2 -H localhost:2 python hvd_train.py" in run.output


def test_one_process_without_horovodrun_trains(run_horovod):
    run = run_horovod("hvd_train.py", "--epochs", "1", np=None, timeout=120)
    assert run.returncode == 0, run.output[-4000:]
    result = run.json("rank0")
    assert result["world_size"] == 1 and result["strategy"] == "horovod"
    assert sorted(result["seen"]) == list(range(40))


def test_sync_batchnorm_on_cpu_is_refused_with_alternatives(run_horovod):
    run = run_horovod("hvd_train.py", "--sync-batchnorm", np=None, timeout=120)
    assert run.returncode != 0
    assert "sync_batchnorm=True with strategy='horovod' on cpu" in run.output
    assert "strategy='ddp'" in run.output


def test_legacy_accelerator_horovod_selects_the_strategy(run_horovod):
    run = run_horovod("hvd_train.py", "--strategy", "legacy-accelerator", "--epochs", "1")
    rank0, rank1 = both_ranks(run)
    assert rank0["strategy"] == "horovod" and rank0["world_size"] == 2
    assert rank0["weights"] == rank1["weights"]
