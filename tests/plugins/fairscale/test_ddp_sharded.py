"""ddp_sharded / ddp_sharded_spawn on 2 CPU processes with gloo and the real fairscale."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

CLIP = ("--clip", "0.1")  # active at this size: clipped and unclipped runs differ


def close(a: dict[str, list[float]], b: dict[str, list[float]], atol: float = 1e-5) -> bool:
    return a.keys() == b.keys() and all(
        torch.allclose(torch.tensor(a[k]), torch.tensor(b[k]), atol=atol) for k in a)


def test_ddp_sharded_matches_ddp_checkpoints_consolidated_state_and_resumes(run_script):
    sharded = run_script("sharded_train.py", "--test", *CLIP)
    assert sharded.returncode == 0, sharded.stderr
    assert "lr_scheduler.step()` before `optimizer.step()" not in sharded.stderr
    rank0, rank1 = sharded.json("rank0"), sharded.json("rank1")
    assert rank0["strategy"] == "ddp_sharded" and rank0["world_size"] == 2
    assert rank0["optimizer_type"] == "OSS" and rank0["global_step"] == 8
    assert close(rank0["weights"], rank1["weights"], atol=0)  # the shards were broadcast back
    assert 0 < rank0["results"][0]["test_acc"] <= 1

    # Same data, same clipping (by the norm over both ranks' shards), same LR schedule as ddp.
    ddp = run_script("sharded_train.py", "--strategy", "ddp", *CLIP)
    assert ddp.returncode == 0, ddp.stderr
    assert close(rank0["weights"], ddp.json("rank0")["weights"])
    # Adam's two moments: the ranks split what every DDP rank holds in full.
    full = ddp.json("rank0")["optimizer_state_bytes"]
    assert rank0["optimizer_state_bytes"] + rank1["optimizer_state_bytes"] == full
    assert max(rank0["optimizer_state_bytes"], rank1["optimizer_state_bytes"]) < full

    # The checkpoint after epoch 1 is an ordinary file with the full optimizer state.
    checkpoint = sharded.out / "ckpt" / "epoch=0-step=4.ckpt"
    state = torch.load(checkpoint, weights_only=True)
    optimizer = state["optimizer_states"][0]
    names = ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]
    assert sorted(optimizer["state"]) == sorted(names)  # every parameter, from both ranks
    assert optimizer["state"]["net.0.weight"]["exp_avg"].shape == (16, 8)  # by name: canonical
    assert optimizer["param_groups"][0]["params"] == names
    assert optimizer["param_groups"][0]["lr"] == pytest.approx(0.025)  # StepLR after 4 steps
    assert state["state_dict"]["net.0.weight"].shape == (16, 8)

    resumed = run_script("sharded_train.py", "--resume", str(checkpoint), *CLIP)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.json("rank0")["global_step"] == 8
    assert close(resumed.json("rank0")["weights"], rank0["weights"])

    spawn = run_script("sharded_train.py", "--strategy", "ddp_sharded_spawn", "--test",
                       "--resume", str(checkpoint), *CLIP)
    assert spawn.returncode == 0, spawn.stderr
    main = spawn.json("rank0")  # written by the caller, which got rank 0's weights back
    assert main["strategy"] == "ddp_sharded_spawn" and main["global_step"] == 8
    assert main["checkpoints"] == ["epoch=1-step=8.ckpt"]
    assert 0 < main["results"][0]["test_acc"] <= 1
    assert close(main["weights"], rank0["weights"])


def test_ddp_sharded_16_mixed_scales_the_loss_and_matches_ddp(run_script):
    sharded = run_script("sharded_train.py", "--precision", "16-mixed", "--epochs", "1")
    ddp = run_script("sharded_train.py", "--precision", "16-mixed", "--epochs", "1",
                     "--strategy", "ddp")
    assert sharded.returncode == 0 and ddp.returncode == 0, sharded.stderr + ddp.stderr
    assert close(sharded.json("rank0")["weights"], ddp.json("rank0")["weights"])
    saved = torch.load(sharded.out / "ckpt" / "epoch=0-step=4.ckpt", weights_only=True)
    assert saved["precision"]["scaler"]["_growth_tracker"] == 4  # scaled, no step skipped
