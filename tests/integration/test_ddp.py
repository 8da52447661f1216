"""DDP for real: 2 CPU processes, gloo, the script re-launched, spawned or forked."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def weights_equal(a: list[list[float]], b: list[list[float]], atol: float = 1e-6) -> bool:
    return all(torch.allclose(torch.tensor(x), torch.tensor(y), atol=atol) for x, y in zip(a, b))


def test_ddp_relaunches_the_script_and_shards_the_data(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--devices", "2")
    assert run.returncode == 0, run.stderr
    r0, r1 = run.json("rank0"), run.json("rank1")
    assert (r0["world_size"], r1["world_size"]) == (2, 2)
    # disjoint shards that cover the data (32 training samples, 16 validation samples)
    for epoch in range(2):
        part = slice(16 * epoch, 16 * (epoch + 1))
        assert sorted(r0["seen"][part] + r1["seen"][part]) == list(range(32))
    assert sorted(r0["val_seen"][:8] + r1["val_seen"][:8]) == list(range(16))
    assert weights_equal(r0["weights"], r1["weights"], atol=0)  # gradients were synchronised
    assert r0["global_step"] == 8


def test_two_processes_with_batch_b_equal_one_with_batch_2b(run_script):
    ddp = run_script("train.py", "--strategy", "ddp", "--devices", "2", "--batch", "4")
    single = run_script("train.py", "--strategy", "single_device", "--devices", "1",
                        "--batch", "8")
    assert ddp.returncode == 0 and single.returncode == 0, ddp.stderr + single.stderr
    assert weights_equal(ddp.json("rank0")["weights"], single.json("main")["weights"], atol=1e-5)


@pytest.mark.parametrize("strategy", ["ddp_spawn", "ddp_fork"])
def test_spawn_and_fork_return_weights_metrics_and_results(run_script, strategy):
    run = run_script("train.py", "--strategy", strategy, "--test")
    reference = run_script("train.py", "--strategy", "single_device", "--devices", "1",
                           "--batch", "8", "--test")
    assert run.returncode == 0, run.stderr
    main = run.json("main")
    assert weights_equal(main["weights"], reference.json("main")["weights"], atol=1e-5)
    assert main["global_step"] == 8 and main["best_model_path"].endswith("epoch=1-step=8.ckpt")
    assert main["results"][0]["gathered_sum"] == 1.0  # all_gather of ranks [0, 1]
    assert "test_acc" in main["callback_metrics"]


def test_sync_dist_means_across_ranks(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--log-rank", "--epochs", "1")
    assert run.returncode == 0, run.stderr
    for rank in (0, 1):
        metrics = run.json(f"rank{rank}")["callback_metrics"]
        assert metrics["rank_synced"] == 0.5
        assert metrics["rank_local"] == float(rank)


def test_use_distributed_sampler_false_leaves_loaders_alone(run_script):
    run = run_script("train.py", "--strategy", "ddp", "--no-sampler", "--epochs", "1")
    assert run.returncode == 0, run.stderr
    assert run.json("rank0")["seen"] == run.json("rank1")["seen"] == list(range(32))


def test_python_dash_m_module_is_relaunched_as_a_module(run_script):
    run = run_script("train", "--strategy", "ddp", "--epochs", "1", module=True)
    assert run.returncode == 0, run.stderr
    assert run.json("rank1")["world_size"] == 2


def test_auto_picks_ddp_for_two_cpu_processes(run_script):
    run = run_script("train.py", "--strategy", "auto", "--epochs", "1")
    assert run.returncode == 0, run.stderr
    assert run.json("rank0")["strategy"] == "ddp"
