"""The helpers fulmen serves under Lightning's utility names, checked against Lightning's own
tests and doctests (ported): ``tests_pytorch/utilities/test_parameter_tying.py``,
``test_grads.py``, ``test_signature_utils.py``, ``test_memory.py``, ``test_data.py``,
``migration/test_migration.py``, ``plugins/test_layer_sync.py``, the doctests of
``core/saving.py``, ``combined_loader.py`` and ``loggers/logger.py``'s ``merge_dicts``."""

from __future__ import annotations

import io
import os
import statistics
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from fulmen import ConfigurationError
from fulmen.callbacks import EarlyStopping, ModelCheckpoint
from fulmen.demos.boring_classes import BoringModel, RandomDataset, RandomIterableDataset
from fulmen.dropin.names import LIGHTNING_VERSION
from fulmen.utilities.cloud_io import get_filesystem, pl_load
from fulmen.utilities.combined_loader import CombinedLoader
from fulmen.utilities.conversions import convert_tensors_to_scalars, convert_to_tensors
from fulmen.utilities.data import extract_batch_size, has_len, sized_len, suggested_max_num_workers
from fulmen.utilities.grads import grad_norm
from fulmen.utilities.layer_sync import TorchSyncBatchNorm
from fulmen.utilities.memory import is_oom_error, recursive_detach
from fulmen.utilities.migration import migrate_checkpoint, pl_legacy_patch
from fulmen.utilities.parameter_tying import find_shared_parameters, set_shared_parameters
from fulmen.utilities.saving import (
    convert,
    load_hparams_from_tags_csv,
    load_hparams_from_yaml,
    save_hparams_to_tags_csv,
    save_hparams_to_yaml,
    update_hparams,
)
from fulmen.utilities.signature_utils import is_param_in_hook_signature


class ParameterSharingModule(BoringModel):
    def __init__(self) -> None:
        super().__init__()
        self.layer_1 = nn.Linear(32, 10, bias=False)
        self.layer_2 = nn.Linear(10, 32, bias=False)
        self.layer_3 = nn.Linear(32, 10, bias=False)
        self.layer_3.weight = self.layer_1.weight


@pytest.mark.parametrize(("model", "expected"), [
    (BoringModel, []), (ParameterSharingModule, [["layer_1.weight", "layer_3.weight"]])])
def test_find_shared_parameters(model: type, expected: list[list[str]]) -> None:
    assert find_shared_parameters(model()) == expected


def test_set_shared_parameters() -> None:
    class SubModule(nn.Module):
        def __init__(self, layer: nn.Module) -> None:
            super().__init__()
            self.layer = layer

    class NestedModule(BoringModel):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(32, 10, bias=False)
            self.net_a = SubModule(self.layer)
            self.net_b = SubModule(nn.Linear(32, 10, bias=False))

    model = NestedModule()
    set_shared_parameters(model, [["layer.weight", "net_a.layer.weight", "net_b.layer.weight"]])
    assert model.net_b.layer.weight is model.layer.weight


@pytest.mark.parametrize(("norm_type", "expected"), [
    (1, {"grad_1.0_norm/param0": 6.0, "grad_1.0_norm/param1": 9.0, "grad_1.0_norm_total": 15.0}),
    ("inf", {"grad_inf_norm/param0": 3.0, "grad_inf_norm/param1": 5.0,
             "grad_inf_norm_total": 5.0})])
def test_grad_norm(norm_type: Any, expected: dict[str, float]) -> None:
    model = nn.Module()
    model.param0 = nn.Parameter(torch.rand(3))
    model.param1 = nn.Parameter(torch.rand(2, 1))
    model.param2 = nn.Parameter(torch.rand(1))  # no gradient: not counted
    model.param0.grad = torch.tensor([-1.0, 2.0, -3.0])
    model.param1.grad = torch.tensor([[-4.0], [5.0]])
    norms = grad_norm(model, norm_type)
    assert {k: float(v) for k, v in norms.items()} == pytest.approx(expected)
    with pytest.raises(ValueError, match="`norm_type` must be a positive number"):
        grad_norm(model, 0)


def test_is_param_in_hook_signature() -> None:
    class LightningModule:
        def validation_step(self, dataloader_iter: Any, batch_idx: int) -> None: ...

    model = LightningModule()
    assert is_param_in_hook_signature(model.validation_step, "dataloader_iter", explicit=True)

    class LightningModule2:
        def validation_step(self, *args: Any) -> None: ...

    model2 = LightningModule2()
    assert not is_param_in_hook_signature(model2.validation_step, "dataloader_iter",
                                          explicit=True)
    assert is_param_in_hook_signature(model2.validation_step, "dataloader_iter", explicit=False)

    class LightningModule3:
        def validation_step(self, batch: Any, batch_idx: int) -> None: ...

    assert is_param_in_hook_signature(LightningModule3().validation_step, "x", min_args=2)
    assert not is_param_in_hook_signature(LightningModule3().validation_step, "x", min_args=3)


def test_recursive_detach() -> None:
    device = torch.device("cpu")
    x = {"foo": torch.tensor(0, device=device), "bar": {"baz": torch.tensor(1.0, device=device,
                                                                           requires_grad=True)}}
    y = recursive_detach(x, to_cpu=True)
    assert x["foo"].device.type == y["foo"].device.type == "cpu"
    assert x["bar"]["baz"].requires_grad and not y["bar"]["baz"].requires_grad


def test_out_of_memory_errors() -> None:
    assert is_oom_error(RuntimeError("CUDA out of memory. Tried to allocate"))
    assert is_oom_error(RuntimeError("DefaultCPUAllocator: can't allocate memory"))
    assert not is_oom_error(RuntimeError("something else"))


def test_data_lengths_and_batch_sizes() -> None:
    loader = DataLoader(RandomDataset(32, 64), batch_size=4)
    assert sized_len(loader) == 16 and has_len(loader)
    assert sized_len(DataLoader(RandomIterableDataset(32, 8))) is None
    assert extract_batch_size(torch.zeros(5, 2)) == 5
    assert extract_batch_size({"a": torch.zeros(3, 2), "b": [torch.zeros(3)]}) == 3
    assert extract_batch_size(torch.tensor(1.0)) == 1
    with pytest.warns(UserWarning, match="ambiguous collection"):
        assert extract_batch_size([torch.zeros(2), torch.zeros(4)]) == 2
    with pytest.raises(ConfigurationError, match="could not infer the batch_size"):
        extract_batch_size({"a": "text"})
    assert suggested_max_num_workers(1) >= 1
    with pytest.raises(ValueError, match="should be >= 1"):
        suggested_max_num_workers(0)


def test_conversions() -> None:
    converted = convert_to_tensors({"a": 1, "b": 2.5, "c": True}, "cpu")
    assert converted["a"].dtype == torch.int and converted["c"].dtype == torch.uint8
    assert convert_tensors_to_scalars({"x": torch.tensor(2.0)}) == {"x": 2.0}
    with pytest.raises(ValueError, match="does not contain a single element"):
        convert_tensors_to_scalars(torch.zeros(2))


def test_hparams_files(tmp_path: Path) -> None:
    """``core/saving.py``'s doctests."""
    hparams = Namespace(batch_size=32, learning_rate=0.001, data_root="./any/path/here")
    csv_path, yaml_path = tmp_path / "hparams.csv", tmp_path / "hparams.yaml"
    save_hparams_to_tags_csv(csv_path, hparams)
    assert load_hparams_from_tags_csv(csv_path) == vars(hparams)
    save_hparams_to_yaml(yaml_path, hparams)
    assert dict(load_hparams_from_yaml(yaml_path)) == vars(hparams)
    with pytest.warns(RuntimeWarning, match="Missing Tags"):
        assert load_hparams_from_yaml(tmp_path / "missing.yaml") == {}
    with pytest.raises(RuntimeError, match="Missing folder"):
        save_hparams_to_yaml(tmp_path / "nope" / "h.yaml", {})
    params = {"c": 4}
    update_hparams(params, {"a": {"b": 2}, "c": 1})
    assert params == {"c": 1, "a": {"b": 2}}
    assert convert("3") == 3 and convert("True") is True and convert("text") == "text"


def test_cloud_io(tmp_path: Path) -> None:
    assert type(get_filesystem("memory://bucket/x")).__name__ == "MemoryFileSystem"
    path = tmp_path / "obj.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert torch.equal(pl_load(path)["w"], torch.ones(2))
    buffer = io.BytesIO(path.read_bytes())
    assert torch.equal(pl_load(buffer)["w"], torch.ones(2))


def test_combined_loader_modes() -> None:
    """``CombinedLoader``'s doctest: the four modes."""
    iterables = {"a": DataLoader(range(6), batch_size=4),
                 "b": DataLoader(range(15), batch_size=5)}

    def run(mode: str) -> tuple[int, list[Any]]:
        combined = CombinedLoader(iterables, mode)
        iter(combined)
        return len(combined), list(combined)

    n, steps = run("max_size_cycle")
    assert n == 3 and [(idx, dl) for _, idx, dl in steps] == [(0, 0), (1, 0), (2, 0)]
    assert steps[2][0]["a"].tolist() == [0, 1, 2, 3] and steps[2][0]["b"].tolist() == [10, 11,
                                                                                      12, 13, 14]
    n, steps = run("max_size")
    assert n == 3 and steps[2][0]["a"] is None
    n, steps = run("min_size")
    assert n == 2 and len(steps) == 2
    n, steps = run("sequential")
    assert n == 5 and [(idx, dl) for _, idx, dl in steps] == [(0, 0), (1, 0), (0, 1), (1, 1),
                                                              (2, 1)]
    assert steps[0][0].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="Unsupported mode"):
        CombinedLoader(iterables, "nope")


@pytest.mark.parametrize(("old", "new"), [
    ({"epoch": 1, "global_step": 23, "checkpoint_callback_best": 0.34},
     {"epoch": 1, "global_step": 23, "callbacks": {ModelCheckpoint: {"best_model_score": 0.34}}}),
    ({"epoch": 1, "global_step": 23, "early_stop_callback_wait": 2,
      "early_stop_callback_patience": 4},
     {"epoch": 1, "global_step": 23, "callbacks": {EarlyStopping: {"wait_count": 2,
                                                                   "patience": 4}}})])
def test_migrate_model_checkpoint_early_stopping(old: dict[str, Any],
                                                 new: dict[str, Any]) -> None:
    old["pytorch-lightning_version"] = "0.9.0"
    new["legacy_pytorch-lightning_version"] = "0.9.0"
    new["pytorch-lightning_version"] = LIGHTNING_VERSION
    updated, applied = migrate_checkpoint(old, target_version="1.0.0")
    assert updated == old == new
    assert applied == {"0.10.0": ["_migrate_model_checkpoint_early_stopping"]}


def test_migrate_loops_to_progress_tracking_and_the_2_0_structure() -> None:
    old = {"global_step": 15, "epoch": 2, "pytorch-lightning_version": "1.5.9"}
    updated, applied = migrate_checkpoint(old)
    assert list(applied) == ["1.6.0", "1.6.5", "1.9.0", "2.0.0"]
    fit_loop = updated["loops"]["fit_loop"]
    assert fit_loop["epoch_progress"]["current"]["completed"] == 2
    progress = fit_loop["epoch_loop.automatic_optimization.optim_progress"]
    assert progress["optimizer"]["step"]["total"]["completed"] == 15
    assert "optimizer_position" not in progress
    assert fit_loop["epoch_loop.manual_optimization.optim_step_progress"]["total"][
        "completed"] == 15
    old = {"global_step": 7, "epoch": 0, "pytorch-lightning_version": "1.6.4",
           "loops": {"fit_loop": {"epoch_loop.state_dict": {}}}}
    updated, applied = migrate_checkpoint(old, target_version="1.6.5")
    assert updated["loops"]["fit_loop"]["epoch_loop.state_dict"]["_batches_that_stepped"] == 7
    newer = {"pytorch-lightning_version": "99.0.0"}
    with pytest.warns(UserWarning, match="newer than your current Lightning version"):
        assert migrate_checkpoint(newer) == (newer, {})


def test_pl_legacy_patch_restores_what_it_changed(tmp_path: Path) -> None:
    import pickle
    import sys

    path = tmp_path / "legacy.pkl"
    torch.save({"x": 1}, path)
    with pl_legacy_patch():
        assert "lightning.pytorch.utilities.argparse_utils" in sys.modules
        assert sys.modules["pytorch_lightning.utilities.argparse_utils"]._gpus_arg_default(3) == 3
        assert torch.load(path, weights_only=False) == {"x": 1}
    assert "lightning.pytorch.utilities.argparse_utils" not in sys.modules
    assert pickle.Unpickler.__module__ in ("pickle", "_pickle")


def test_torch_sync_batchnorm_apply_and_revert() -> None:
    """``plugins/test_layer_sync.py``: apply and revert keep the parameters."""
    model = nn.Sequential(nn.BatchNorm1d(4), nn.Linear(4, 2), nn.BatchNorm2d(3))
    weight = model[0].weight
    synced = TorchSyncBatchNorm().apply(model)
    assert isinstance(synced[0], nn.SyncBatchNorm) and isinstance(synced[2], nn.SyncBatchNorm)
    reverted = TorchSyncBatchNorm().revert(synced)
    assert not any(isinstance(m, nn.SyncBatchNorm) for m in reverted.modules())
    assert reverted[0].weight is weight
    assert reverted[0](torch.randn(3, 4)).shape == (3, 4)  # a batch norm of any dimension


def test_merge_dicts() -> None:
    from fulmen.loggers.dummy import DummyLogger, merge_dicts

    d1 = {"a": 1.7, "b": 2.0, "c": 1, "d": {"d1": 1, "d3": 3}}
    d2 = {"a": 1.1, "b": 2.2, "v": 1, "d": {"d1": 2, "d2": 3}}
    d3 = {"a": 1.1, "v": 2.3, "d": {"d3": 3, "d4": {"d5": 1}}}
    merged = merge_dicts([d1, d2, d3], {"a": statistics.mean, "v": max, "d": {"d1": sum}}, min)
    assert merged == {"a": pytest.approx(1.3), "b": 2.0, "c": 1,
                      "d": {"d1": 3, "d2": 3, "d3": 3, "d4": {"d5": 1}}, "v": 2.3}
    logger = DummyLogger()
    logger.log_metrics({"x": 1}, 0)
    assert logger[0] is logger and logger.anything(1, 2) is None
    assert logger.experiment.add_image("x") is logger.experiment
    assert logger.name == logger.version == ""


def test_experiment_writer(tmp_path: Path) -> None:
    from fulmen.loggers.experiment_writer import ExperimentWriter

    writer = ExperimentWriter(str(tmp_path / "logs"))
    writer.log_hparams({"lr": 0.1})
    writer.log_metrics({"loss": torch.tensor(1.5)}, step=0)
    writer.save()
    writer.log_metrics({"loss": 1.0, "acc": 0.5}, step=1)
    writer.save()
    lines = (tmp_path / "logs" / "metrics.csv").read_text().splitlines()
    assert lines == ["acc,loss,step", ",1.5,0", "0.5,1.0,1"]
    assert "lr: 0.1" in (tmp_path / "logs" / "hparams.yaml").read_text()
    assert os.path.basename(writer.metrics_file_path) == "metrics.csv"
