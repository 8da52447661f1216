"""FSDP2 on CPU processes with gloo: trains like DDP, saves full and sharded checkpoints,
resumes from both."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def close(a: dict[str, list[float]], b: dict[str, list[float]]) -> bool:
    return all(torch.allclose(torch.tensor(a[k]), torch.tensor(b[k]), atol=1e-5) for k in a)


@pytest.mark.parametrize("state_dict_type", ["full", "sharded"])
def test_fsdp_trains_checkpoints_and_resumes(run_script, state_dict_type):
    straight = run_script("fsdp_train.py", "--state-dict-type", state_dict_type, "--adam",
                          timeout=150)
    assert straight.returncode == 0, straight.stderr
    first = run_script("fsdp_train.py", "--state-dict-type", state_dict_type, "--adam",
                       "--epochs", "1", timeout=150)
    assert first.returncode == 0, first.stderr
    checkpoint = first.out / "ckpt" / "epoch=0-step=4.ckpt"
    assert checkpoint.is_dir() == (state_dict_type == "sharded")
    if state_dict_type == "full":  # one ordinary file, loadable without FSDP
        state = torch.load(checkpoint, weights_only=True)
        assert state["state_dict"]["net.0.weight"].shape == (16, 8)
        assert state["optimizer_states"][0]["state"]
    resumed = run_script("fsdp_train.py", "--state-dict-type", state_dict_type, "--adam",
                         "--resume", str(checkpoint), timeout=150)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.json("rank0")["global_step"] == 8
    assert close(straight.json("rank0")["weights"], resumed.json("rank0")["weights"])


def test_fsdp_matches_ddp_and_shards_parameters(run_script):
    fsdp = run_script("fsdp_train.py", timeout=150)
    ddp = run_script("fsdp_train.py", "--strategy", "ddp", timeout=150)
    assert fsdp.returncode == 0 and ddp.returncode == 0, fsdp.stderr + ddp.stderr
    assert close(fsdp.json("rank0")["weights"], ddp.json("rank0")["weights"])
    assert fsdp.json("rank0")["param_bytes"] <= ddp.json("rank0")["param_bytes"] / 2 + 64


def test_fsdp_with_bf16_mixed_trains(run_script):
    run = run_script("fsdp_train.py", "--precision", "bf16-mixed", "--epochs", "1", timeout=150)
    assert run.returncode == 0, run.stderr
    assert run.json("rank0")["global_step"] == 4
