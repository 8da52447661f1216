"""Real DeepSpeed on 2 CPU processes with gloo: every strategy name trains, checkpoints (the
canonical file: fp32 weights and the optimizer state assembled from every rank's partition),
resumes in a new Trainer, and tests; fp32 runs match plain ``ddp`` on the same data (with
gradient accumulation and clipping filled from the Trainer); ZeRO-3 checkpoints hold one fp32
state dict any model loads; Lite steps through the engine and resumes exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from processes import clean_environment

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
pytest.importorskip("deepspeed")

SCRIPTS = Path(__file__).parent / "scripts"
FLAGS = ("--accumulate", "2", "--clip", "0.5")  # 4 batches per epoch and rank: 2 steps
STRATEGIES = ["deepspeed", "deepspeed_stage_1", "deepspeed_stage_2",
              "deepspeed_stage_2_offload", "deepspeed_stage_3", "deepspeed_stage_3_offload"]


def max_diff(a: dict[str, list[float]], b: dict[str, list[float]]) -> float:
    assert a.keys() == b.keys()
    return max(float((torch.tensor(a[k]) - torch.tensor(b[k])).abs().max()) for k in a)


@pytest.fixture(scope="module")
def ddp_weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[float]]:
    """Plain DDP, 2 straight epochs: the reference every fp32 ZeRO run must reproduce."""
    out = tmp_path_factory.mktemp("ddp")
    done = subprocess.run([sys.executable, str(SCRIPTS / "ds_train.py"), "--strategy", "ddp",
                           *FLAGS, "--out", str(out)], capture_output=True, text=True,
                          timeout=150, cwd=out, start_new_session=True,
                          env=clean_environment([SCRIPTS], drop=("DS_ACCELERATOR",)))
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    return json.loads((out / "rank0.json").read_text())["weights"]


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_name_trains_checkpoints_resumes_and_tests_like_ddp(run_script: Any, name: str,
                                                                  ddp_weights: Any) -> None:
    run = run_script("ds_train.py", "--strategy", name, "--resume-after", "1", *FLAGS, "--test")
    assert run.returncode == 0, run.stderr[-3000:]
    result = run.json("rank0")
    assert result["resumed_from"] == "epoch=0-step=2.ckpt"
    assert result["global_step"] == 4
    assert result["checkpoints"] == ["epoch=0-step=2.ckpt", "epoch=1-step=4.ckpt"]
    checkpoint = run.out / "ckpt" / "epoch=1-step=4.ckpt"
    saved = torch.load(checkpoint, weights_only=True)  # the canonical file: ZeRO assembled
    optimizer = saved["optimizer_states"][0]
    assert set(optimizer["state"]) == set(saved["state_dict"])  # keyed by parameter names
    assert all(entry["exp_avg"].shape == saved["state_dict"][name].shape
               for name, entry in optimizer["state"].items())
    # Resumed after epoch 1 in a new Trainer, yet equal to plain DDP trained straight through:
    # the optimizer state, the step count and the accumulation/clipping settings all carried.
    assert max_diff(result["weights"], ddp_weights) < 1e-5
    assert result["test"][0]["test_acc"] > 0.5


def test_zero3_checkpoint_is_one_fp32_file_any_model_loads(run_script: Any) -> None:
    run = run_script("ds_train.py", "--strategy", "deepspeed_stage_3", "--epochs", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    checkpoint = run.out / "ckpt" / "epoch=0-step=4.ckpt"
    state = torch.load(checkpoint, weights_only=True)["state_dict"]  # no DeepSpeed needed
    assert all(t.dtype == torch.float32 for t in state.values())
    expected = run.json("rank0")["weights"]
    assert max_diff({k: v.flatten().tolist() for k, v in state.items()}, expected) < 1e-6
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    net.load_state_dict({k.removeprefix("net."): v for k, v in state.items()})


def test_bf16_mixed_runs_the_engine_in_bfloat16(run_script: Any) -> None:
    run = run_script("ds_train.py", "--strategy", "deepspeed_stage_2", "--precision",
                     "bf16-mixed", "--epochs", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.json("rank0")["global_step"] == 4


def test_lite_steps_through_the_engine_and_resumes_exactly(run_script: Any) -> None:
    run = run_script("ds_lite.py", "--strategy", "deepspeed_stage_3")
    assert run.returncode == 0, run.stderr[-3000:]
    result = run.json("rank0")
    assert not result["is_dir"] and result["world_size"] == 2  # the canonical file
    assert result["rest"] == {"step": 8}
    assert result["restored"] != result["after_two"]  # the load rolled the weights back...
    assert result["again"] == pytest.approx(result["after_two"], abs=1e-6)  # ...and the state


def test_one_process_with_float16_runs_the_engine(run_script: Any) -> None:
    import torch

    if not torch.ops.mkldnn._is_mkldnn_fp16_supported():
        pytest.skip("this CPU has no float16 kernels (16-mixed is refused here)")
    run = run_script("ds_single.py", "--strategy", "deepspeed_stage_3", "--precision",
                     "16-mixed")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.json("rank0") == {"global_step": 4, "fp16": True, "micro_batch": 8,
                                 "world_size": 1}


def test_a_run_leaves_no_shared_memory_behind(run_script: Any) -> None:
    """DeepSpeed's CPU all-reduce buffers (~66 MB per rank in /dev/shm) are unlinked once every
    rank has mapped them; left behind, every run would eat memory until the machine swaps."""
    def buffers() -> set[str]:
        return {p.name for p in Path("/dev/shm").glob("deepspeed_allreduce_buffer_*")}

    before = buffers()
    run = run_script("ds_train.py", "--strategy", "deepspeed_stage_2", "--epochs", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    assert buffers() - before == set()
