"""``model_parallel``: a 2-D DeviceMesh (data_parallel x tensor_parallel) on CPU processes with
gloo; the model parallelises itself (Lite: ``parallelize_fn``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from processes import script_runner

import fulmen
from fulmen import ConfigurationError

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def run_script(tmp_path: Path) -> Any:
    return script_runner(tmp_path, SCRIPTS, 240, drop=("OMP_NUM_THREADS",))


def same_weights(a: dict[str, Any], b: dict[str, Any], atol: float = 1e-5) -> bool:
    return a.keys() == b.keys() and all(
        torch.allclose(torch.tensor(a[k]), torch.tensor(b[k]), atol=atol) for k in a)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("devices", "dp", "tp"), [(2, "1", "2"), (2, "2", "1"),
                                                     (4, "2", "2")],
                         ids=["tp2", "dp2", "dp2xtp2"])
def test_the_mesh_trains_like_one_process(run_script, devices, dp, tp):
    """Every rank ends with the full weights of a one-process run on the same global batches;
    data is sharded over data_parallel only; reduce works over every rank (Lightning's)."""
    reference = run_script("model_parallel_lite.py", "--devices", "1")
    assert reference.returncode == 0, reference.stderr
    run = run_script("model_parallel_lite.py", "--devices", str(devices), "--dp", dp,
                     "--tp", tp, env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    want = reference.json("rank0")
    ranks = [run.json(f"rank{r}") for r in range(devices)]
    tp_size, dp_size = int(tp), int(dp)
    for rank, got in enumerate(ranks):
        assert same_weights(got["weights"], want["weights"]), rank
        group = ranks[(rank // tp_size) * tp_size]  # the first rank of its tensor-parallel group
        assert got["seen"] == group["seen"]  # a tensor-parallel group sees the same samples
        assert got["sum"] == devices  # reduced over every rank, as Lightning does
    shards = [ranks[g * tp_size]["seen"] for g in range(dp_size)]  # two epochs each
    assert sorted(i for shard in shards for i in shard) == sorted(list(range(32)) * 2)


@pytest.mark.timeout(300)
def test_a_model_built_on_the_meta_device_is_materialised_shard_by_shard(run_script):
    run = run_script("model_parallel_lite.py", "--devices", "2", "--dp", "2", "--tp", "1",
                     "--meta", env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    assert run.json("rank0")["meta_params"] == 0


@pytest.mark.timeout(300)
def test_activation_checkpointing_with_tensor_parallel_keeps_the_result(run_script):
    reference = run_script("model_parallel_lite.py", "--devices", "1")
    run = run_script("model_parallel_lite.py", "--devices", "2", "--dp", "1", "--tp", "2",
                     "--ac", env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    assert same_weights(run.json("rank1")["weights"], reference.json("rank0")["weights"])
    assert reference.json("rank0")["w1_forward_calls"] == 8  # 2 epochs x 4 batches
    assert run.json("rank1")["w1_forward_calls"] == 16  # recomputed in every backward


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("precision", "dtype"), [("bf16-true", "torch.bfloat16"),
                                                  ("bf16-mixed", "torch.float32")])
def test_bf16_with_tensor_parallel_and_sharding(run_script, precision, dtype):
    """2x2 mesh with FSDP2's MixedPrecisionPolicy from the precision (strategy.
    mixed_precision_policy()): bf16-true keeps bfloat16 parameters, bf16-mixed float32 ones
    computed in bfloat16; both track a one-process run of the same precision (bf16 tolerance)."""
    reference = run_script("model_parallel_lite.py", "--devices", "1", "--precision", precision)
    assert reference.returncode == 0, reference.stderr
    run = run_script("model_parallel_lite.py", "--devices", "4", "--dp", "2", "--tp", "2",
                     "--precision", precision, env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    want, got = reference.json("rank0"), run.json("rank0")
    assert got["param_dtypes"] == want["param_dtypes"] == [dtype]
    assert got["losses"][-1] < got["losses"][0]
    assert same_weights(got["weights"], want["weights"], atol=0.05)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"data_parallel_size": 0}, "data_parallel_size=0): give an int >= 1 or 'auto'"),
    ({"tensor_parallel_size": "two"}, "tensor_parallel_size='two'): give an int"),
])
def test_bad_sizes_are_refused_at_construction(kwargs, message):
    from fulmen_strategies import ModelParallelStrategy

    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ModelParallelStrategy(**kwargs)


def test_a_mesh_that_does_not_fit_the_world_size_names_the_alternatives():
    from fulmen_strategies import ModelParallelStrategy

    lite = fulmen.Lite(accelerator="cpu", devices=4, strategy=ModelParallelStrategy(
        data_parallel_size=3, tensor_parallel_size=2))
    with pytest.raises(ConfigurationError, match="on 4 processes: the product") as info:
        lite.strategy.mesh_shape()
    assert "data_parallel_size=2, tensor_parallel_size=2" in str(info.value)


def test_auto_follows_lightning_one_data_parallel_group_per_node():
    lite = fulmen.Lite(accelerator="cpu", devices=4, strategy="model_parallel")
    assert lite.strategy.name == "model_parallel"
    assert lite.strategy.mesh_shape() == (1, 4)


@pytest.mark.timeout(300)
def test_the_trainer_path_configure_model_on_the_meta_device(run_script):
    """Trainer: configure_model runs under the strategy's meta-device context and parallelises
    on self.device_mesh; each rank materialises its shard (reset_parameters, so the initial
    values are not the one-process run's) and the two ranks train one model."""
    run = run_script("model_parallel_trainer.py", "--devices", "2",
                     env={"OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    ranks = [run.json(f"rank{rank}") for rank in (0, 1)]
    for got in ranks:
        assert got["built_on"] == ["meta"] and got["mesh"] == [1, 2]
        assert len(got["losses"]) == 8 and got["losses"][-1] < got["losses"][0]
    assert same_weights(ranks[0]["weights"], ranks[1]["weights"])
    assert ranks[0]["losses"] == ranks[1]["losses"]  # one model, split across the ranks


def test_meta_init_names_the_module_without_reset_parameters():
    """A module that holds meta tensors and has no reset_parameters (nor an ancestor with one)
    would keep uninitialised memory: refused before allocating, naming it."""
    from fulmen_strategies import ModelParallelStrategy

    class Scale(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gain = torch.nn.Parameter(torch.ones(4))

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), Scale())
    lite = fulmen.Lite(accelerator="cpu", devices=1, strategy=ModelParallelStrategy())
    with pytest.raises(ConfigurationError, match=r"1 \(Scale\) has no reset_parameters\(\)"):
        lite.strategy.wrap_module(model)
    with torch.device("meta"):
        fine = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    assert not any(p.is_meta for p in lite.strategy.wrap_module(fine).parameters())


def test_a_tp_plan_naming_a_missing_module_lists_the_modules():
    from torch.distributed.tensor.parallel import ColwiseParallel

    from fulmen_strategies import check_tp_plan

    model = torch.nn.Sequential()
    model.add_module("w1", torch.nn.Linear(2, 2))
    with pytest.raises(ConfigurationError, match=r"'w3' names no submodule .* modules are: w1"):
        check_tp_plan(model, {"w1": ColwiseParallel(), "w3": ColwiseParallel()})
    check_tp_plan(model, {"w*": ColwiseParallel()})  # torch's fnmatch patterns are understood
