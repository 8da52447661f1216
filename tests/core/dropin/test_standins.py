"""The fulmen objects behind Lightning names that had no counterpart before: the stand-ins for
hardware and libraries fulmen does not drive (they answer "unavailable" and refuse
construction, as Lightning's do when the library is missing), the deprecated precision names,
the registries, the hook mixins and the small public pieces of Lightning's loops."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

from fulmen import Accelerator, DataModule, Lite, Module, Precision, Strategy
from fulmen.callbacks import ModelCheckpoint, OnExceptionCheckpoint
from fulmen.callbacks.checkpoint_base import Checkpoint
from fulmen.dropin import graveyard, unavailable
from fulmen.dropin.hooks import CheckpointHooks, DataHooks, ModelHooks
from fulmen.dropin.loops import Closure, ClosureResult, ManualResult, check_finite_loss
from fulmen.dropin.precision_names import DeepSpeedPrecision, FSDPPrecision
from fulmen.dropin.registries import ACCELERATOR_REGISTRY, STRATEGY_REGISTRY
from fulmen.errors import ConfigurationError, FulmenDeprecationWarning, MissingDependencyError
from fulmen.utilities.collectives import SingleDeviceCollective, TorchCollective
from fulmen.utilities.device_query import find_usable_cuda_devices, num_cuda_devices
from fulmen.utilities.spike import SpikeDetection, TrainingSpikeException

XLA_NAMES = ["XLAAccelerator", "TPUAccelerator", "XLAEnvironment", "XLACheckpointIO",
             "XLAPrecision", "XLAStrategy", "SingleDeviceXLAStrategy", "SingleTPUStrategy",
             "XLAFSDPStrategy", "XLAProfiler"]


@pytest.mark.parametrize("name", XLA_NAMES)
def test_xla_names_are_unavailable(name: str) -> None:
    cls = getattr(unavailable, name)
    with pytest.raises(MissingDependencyError, match="torch_xla") as raised:
        cls()
    assert isinstance(raised.value, ModuleNotFoundError) and raised.value.name == "torch_xla"
    assert "accelerator='cpu', 'cuda' or 'mps'" in str(raised.value)


def test_xla_accelerator_answers_unavailable() -> None:
    assert issubclass(unavailable.XLAAccelerator, Accelerator)
    assert issubclass(unavailable.XLAStrategy, Strategy)
    assert not unavailable.XLAAccelerator.is_available()
    assert unavailable.XLAAccelerator.auto_device_count() == 0
    assert not unavailable.XLAEnvironment.detect()


@pytest.mark.parametrize(("name", "library"), [
    ("BitsandbytesPrecision", "bitsandbytes"), ("TransformerEnginePrecision",
                                                "transformer_engine"),
    ("LitLogger", "litlogger")])
def test_library_stand_ins_name_the_library(name: str, library: str) -> None:
    with pytest.raises(MissingDependencyError, match=library) as raised:
        getattr(unavailable, name)("nf4")
    assert raised.value.name == library


def test_neptune_logger_is_sunset_as_in_lightning() -> None:
    with pytest.raises(RuntimeError, match="Neptune has been sunset"):
        unavailable.NeptuneLogger(project="x")


def test_deprecated_precision_names_warn_and_work() -> None:
    with pytest.warns(FulmenDeprecationWarning, match="`PrecisionPlugin` is deprecated"):
        plugin = graveyard.PrecisionPlugin()
    assert isinstance(plugin, Precision)
    with pytest.warns(FulmenDeprecationWarning, match="HalfPrecision"):
        half = graveyard.HalfPrecisionPlugin("bfloat16")
    assert half.dtype == torch.bfloat16
    with pytest.warns(FulmenDeprecationWarning, match="XLAPrecision"), \
            pytest.raises(MissingDependencyError):
        graveyard.XLAPrecisionPlugin("bf16-true")
    with pytest.warns(FulmenDeprecationWarning):
        module = graveyard.LightningDoublePrecisionModule(torch.nn.Linear(2, 2).double())
    assert module(torch.ones(1, 2)).dtype == torch.float64


def test_fsdp_and_deepspeed_precision_give_the_plugin_their_name_selects() -> None:
    mixed = FSDPPrecision("bf16-mixed")
    assert isinstance(mixed, Precision) and mixed.name == "bf16-mixed"
    assert mixed.compute_dtype == torch.bfloat16
    assert DeepSpeedPrecision("32-true").name == "32-true"
    with pytest.raises(ConfigurationError, match="nope"):
        FSDPPrecision("nope")


def test_registries_list_and_build_the_catalog() -> None:
    assert "ddp" in STRATEGY_REGISTRY and "cpu" in ACCELERATOR_REGISTRY
    assert "ddp" in STRATEGY_REGISTRY.available_strategies()
    assert STRATEGY_REGISTRY["ddp_spawn"]["init_params"] == {"start_method": "spawn"}
    assert isinstance(ACCELERATOR_REGISTRY.get("cpu"), Accelerator)
    with pytest.raises(KeyError, match="'nope' not found in registry"):
        STRATEGY_REGISTRY.get("nope")
    with pytest.raises(ConfigurationError, match="already present"):
        STRATEGY_REGISTRY.register("ddp", object)
    with pytest.raises(ConfigurationError, match="FULMEN_DISABLE_PLUGINS"):
        STRATEGY_REGISTRY.remove("ddp")


def test_registering_a_strategy_lets_the_trainer_select_it() -> None:
    """``StrategyRegistry.register`` adds a name for the process (a fresh one here: the plugin
    manager is process-wide)."""
    code = textwrap.dedent("""
        from fulmen import Trainer
        from fulmen.dropin.registries import STRATEGY_REGISTRY
        from fulmen_strategies import SingleDeviceStrategy

        @STRATEGY_REGISTRY.register("my_single", description="mine")
        class MySingle(SingleDeviceStrategy):
            pass

        assert STRATEGY_REGISTRY["my_single"]["strategy"] is MySingle
        trainer = Trainer(strategy="my_single", logger=False, enable_progress_bar=False)
        assert type(trainer.strategy) is MySingle
        print("OK")
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "OK"


def test_hook_mixins_and_checkpoint_base_answer_isinstance() -> None:
    module, datamodule = Module(), DataModule()
    assert isinstance(module, ModelHooks) and isinstance(module, DataHooks)
    assert isinstance(module, CheckpointHooks)
    assert isinstance(datamodule, DataHooks) and not isinstance(datamodule, ModelHooks)
    assert not isinstance(object(), DataHooks)
    assert isinstance(ModelCheckpoint(), Checkpoint)
    assert isinstance(OnExceptionCheckpoint("."), Checkpoint)

    class MyCheckpoint(Checkpoint):
        pass

    assert isinstance(MyCheckpoint(), Checkpoint) and not isinstance(ModelCheckpoint(),
                                                                      MyCheckpoint)
    hooks = DataHooks()
    with pytest.raises(ConfigurationError, match="`train_dataloader` must be implemented"):
        hooks.train_dataloader()
    assert hooks.on_before_batch_transfer(3, 0) == 3


def test_closures_and_results() -> None:
    loss = torch.tensor(2.0, requires_grad=True)
    result = ClosureResult.from_training_step_output({"loss": loss, "acc": 1}, normalize=2)
    assert float(result.closure_loss) == 1.0 and result.asdict() == {"loss": result.loss,
                                                                       "acc": 1}
    with pytest.raises(ConfigurationError, match="'loss' key needs to be present"):
        ClosureResult.from_training_step_output({"acc": 1})
    calls: list[str] = []
    closure = Closure(lambda: ClosureResult.from_training_step_output(loss * 3),
                      backward_fn=lambda value: calls.append("backward"),
                      zero_grad_fn=lambda: calls.append("zero_grad"))
    assert float(closure()) == 6.0 and calls == ["zero_grad", "backward"]
    assert float(closure.consume_result().loss) == 6.0
    with pytest.raises(ConfigurationError, match="hasn't been executed"):
        closure.consume_result()
    assert ManualResult.from_training_step_output(loss).extra["loss"].grad_fn is None
    check_finite_loss(torch.tensor(1.0))
    with pytest.raises(ValueError, match="The loss returned in `training_step` is"):
        check_finite_loss(torch.tensor(float("nan")))


def test_cuda_device_helpers_without_gpus() -> None:
    assert find_usable_cuda_devices(0) == []
    assert num_cuda_devices() == torch.cuda.device_count()
    if num_cuda_devices() == 0:
        with pytest.raises(ValueError, match="no visible CUDA devices"):
            find_usable_cuda_devices(1)


def test_collectives_on_one_process(tmp_path: Path) -> None:
    single = SingleDeviceCollective()
    tensor = torch.ones(2)
    assert single.all_reduce(tensor) is tensor and single.world_size == 1
    assert single.all_gather([], tensor) == [tensor]
    collective = TorchCollective()
    collective.setup(main_address="127.0.0.1", main_port=_free_port(), backend="gloo",
                     world_size=1, rank=0)
    collective.create_group()  # a group of its own, over the default one
    try:
        assert collective.rank == 0 and collective.world_size == 1
        assert torch.equal(collective.all_reduce(torch.ones(2), op="sum"), torch.ones(2))
        collective.barrier()
    finally:
        collective.teardown()
    assert not torch.distributed.is_initialized()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_spike_detection_with_lite(tmp_path: Path) -> None:
    """Fabric's use: the callback gets the Lite and the loss; a jump stops with
    ``TrainingSpikeException`` after writing the batches to skip."""
    lite = Lite(accelerator="cpu", devices=1)
    detection = SpikeDetection(window=3, warmup=1, exclude_batches_path=tmp_path)
    for i, value in enumerate([1.0, 0.9, 0.95, 0.9]):
        detection.on_train_batch_end(lite, torch.tensor(value), None, i)
    with pytest.raises(TrainingSpikeException, match="batch 4"):
        detection.on_train_batch_end(lite, torch.tensor(10.0), None, 4)
    assert (tmp_path / "skip_batches.json").read_text().split() == ["[", "3,", "4", "]"]
    state = detection.state_dict()
    other = SpikeDetection()
    other.load_state_dict(state)
    assert other.bad_batches == [3, 4] and list(other.running) == list(detection.running)


def test_upgrade_checkpoint_command(tmp_path: Path) -> None:
    from fulmen.utilities.upgrade_checkpoint import main

    path = tmp_path / "old.ckpt"
    torch.save({"epoch": 0, "global_step": 3, "pytorch-lightning_version": "1.5.0",
                "state_dict": {}}, path)
    main([str(path)])
    upgraded = torch.load(path, weights_only=True)
    assert upgraded["pytorch-lightning_version"] != "1.5.0"
    assert upgraded["legacy_pytorch-lightning_version"] == "1.5.0"
    assert torch.load(path.with_suffix(".bak"), weights_only=True)[
        "pytorch-lightning_version"] == "1.5.0"
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing")])


def test_model_registry_paths(tmp_path: Path) -> None:
    from fulmen.utilities.model_registry import (
        download_model_from_registry,
        find_model_local_ckpt_path,
    )

    folder = tmp_path / "org_model_1.0"
    folder.mkdir()
    (folder / "best.ckpt").write_bytes(b"")
    found = find_model_local_ckpt_path("registry:org/model:version:1.0", None, tmp_path)
    assert found == str(folder / "best.ckpt")
    with pytest.raises(ValueError, match="Invalid registry path"):
        find_model_local_ckpt_path("model.ckpt", None, tmp_path)

    class OneProcess:
        local_rank = 0

    with pytest.raises(MissingDependencyError, match="litmodels"):
        download_model_from_registry("registry:org/model", OneProcess())


def test_compiled_module_round_trip() -> None:
    from fulmen.demos.boring_classes import BoringModel
    from fulmen.utilities.compile import from_compiled, to_uncompiled

    model = BoringModel()
    forward = model.forward
    compiled = torch.compile(model)
    restored = from_compiled(compiled)
    assert restored is model and model.forward != forward
    assert to_uncompiled(restored) is model and model.forward == forward
    with pytest.raises(ValueError, match="non-compiled"):
        to_uncompiled(model)


def test_deprecation_warnings_are_fulmens() -> None:
    from fulmen.utilities.warnings import (
        LightningDeprecationWarning,
        PossibleUserWarning,
        disable_possible_user_warnings,
    )

    assert LightningDeprecationWarning is FulmenDeprecationWarning
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        disable_possible_user_warnings()
        warnings.warn("maybe", PossibleUserWarning, stacklevel=1)
    assert not seen


def _dummy(*args: Any) -> None:
    return None


@pytest.mark.timeout(240)
def test_fabric_cli_main_runs_the_script_under_fulmen(tmp_path: Path) -> None:
    """``lightning.fabric.cli.main(args, script_args)``: ``torchrun`` starts the script under
    ``fulmen run`` with Fabric's settings as ``LT_*`` variables, which ``Lite`` reads."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import lightning
        from lightning.fabric import Fabric

        fabric = Fabric()
        print("RESULT", lightning.__version__, fabric.world_size, fabric.strategy.name,
              os.environ["LT_DEVICES"], sys.argv[1:], flush=True)
        """))
    code = textwrap.dedent(f"""
        from argparse import Namespace
        from fulmen.dropin.fabric_cli import main

        main(Namespace(script={str(script)!r}, accelerator="cpu", strategy="ddp", devices="2",
                       num_nodes=1, node_rank=0, main_address="127.0.0.1",
                       main_port={_free_port()}, precision=None), ["--lr", "0.1"])
        """)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=220, cwd=tmp_path, env={**env, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    results = sorted(line for line in done.stdout.splitlines() if line.startswith("RESULT"))
    assert results == ["RESULT 2.6.6 2 ddp 2 ['--lr', '0.1']"] * 2


def test_ds_checkpoint_dir(tmp_path: Path) -> None:
    pytest.importorskip("fulmen_deepspeed")
    from fulmen.dropin.deepspeed_utils import ds_checkpoint_dir

    (tmp_path / "global_step3").mkdir()
    (tmp_path / "latest").write_text("global_step3\n")
    assert ds_checkpoint_dir(tmp_path) == str(tmp_path / "global_step3")
    assert ds_checkpoint_dir(tmp_path, "global_step3") == str(tmp_path / "global_step3")
    with pytest.raises(FileNotFoundError, match="doesn't exist"):
        ds_checkpoint_dir(tmp_path, "nope")
    with pytest.raises(ValueError, match="Unable to find 'latest' file"):
        ds_checkpoint_dir(tmp_path / "global_step3")
