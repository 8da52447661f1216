"""Lightning's ``tests_pytorch/loggers/test_tensorboard.py``, ported to fulmen's names (those
that apply to fulmen's TensorBoardLogger).

Deliberate differences (also in docs/migrating.md):
- metrics and hyper-parameters are written by fulmen's own event file, not through
  ``logger.experiment`` (a ``SummaryWriter``, made only when used). Lightning's
  ``test_tensorboard_finalize`` mocks ``SummaryWriter`` and expects ``log_metrics`` to create
  and then flush and close it; here ``log_metrics`` creates no ``SummaryWriter`` at all, and
  ``finalize`` closes the metrics file.
- the missing-folder warning is not ported: a logger whose folder does not exist yet starts at
  version 0 without a warning (it is the usual first run).
- ``test_tensorboard_log_sub_dir`` uses fulmen's Trainer and ``tmp_path``; ``~`` and ``$VAR``
  are expanded as Lightning does.
- ``log_graph`` moves ``example_input_array`` to the module's device itself (fulmen's modules
  have no batch-transfer handler of Lightning's private form).
- Arguments that neither the logger nor ``SummaryWriter`` takes are refused when the logger is
  made (Lightning passes them on and fails when ``experiment`` is first used).
"""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("tensorboard")

import fulmen
from fulmen.errors import ConfigurationError
from fulmen.loggers import TensorBoardLogger


def test_tensorboard_automatic_versioning(tmp_path: Path) -> None:
    root_dir = tmp_path / "tb_versioning"
    root_dir.mkdir()
    (root_dir / "version_0").mkdir()
    (root_dir / "version_1").mkdir()
    logger = TensorBoardLogger(save_dir=tmp_path, name="tb_versioning")
    assert logger.version == 2


def test_tensorboard_manual_versioning(tmp_path: Path) -> None:
    root_dir = tmp_path / "tb_versioning"
    root_dir.mkdir()
    for version in range(3):
        (root_dir / f"version_{version}").mkdir()
    logger = TensorBoardLogger(save_dir=tmp_path, name="tb_versioning", version=1)
    assert logger.version == 1


def test_tensorboard_named_version(tmp_path: Path) -> None:
    """String versions; hyper-parameters with keys that are not strings still write."""
    name = "tb_versioning"
    (tmp_path / name).mkdir()
    expected_version = "2020-02-05-162402"
    logger = TensorBoardLogger(save_dir=tmp_path, name=name, version=expected_version)
    logger.log_hyperparams({"a": 1, "b": 2, 123: 3, 3.5: 4, 5j: 5})  # forces data to be written
    assert logger.version == expected_version
    assert os.listdir(tmp_path / name) == [expected_version]
    assert os.listdir(tmp_path / name / expected_version)


@pytest.mark.parametrize("name", ["", None])
def test_tensorboard_no_name(tmp_path: Path, name: str | None) -> None:
    logger = TensorBoardLogger(save_dir=tmp_path, name=name)  # type: ignore[arg-type]
    logger.log_hyperparams({"a": 1, "b": 2, 123: 3, 3.5: 4, 5j: 5})
    assert os.path.normpath(logger.root_dir) == str(tmp_path)
    assert os.listdir(tmp_path / "version_0")


@pytest.mark.parametrize("step_idx", [10, None])
def test_tensorboard_log_metrics(tmp_path: Path, step_idx: int | None) -> None:
    logger = TensorBoardLogger(tmp_path)
    metrics = {"float": 0.3, "int": 1, "FloatTensor": torch.tensor(0.1),
               "IntTensor": torch.tensor(1)}
    logger.log_metrics(metrics, step_idx)  # type: ignore[arg-type]
    logger.finalize("success")
    assert list(Path(logger.log_dir).glob("events.out.tfevents.*"))


def test_tensorboard_finalize(tmp_path: Path) -> None:
    """No log call: nothing is created. A log call writes the metrics file, which finalize
    closes; no ``SummaryWriter`` is made unless ``experiment`` is used (see the docstring)."""
    logger = TensorBoardLogger(save_dir=tmp_path)
    logger.finalize("any")
    assert not (tmp_path / "fulmen_logs").exists()
    logger = TensorBoardLogger(save_dir=tmp_path)
    logger.log_metrics({"flush_me": 11.1}, step=0)
    logger.finalize("any")
    [events] = Path(logger.log_dir).glob("events.out.tfevents.*")
    assert events.stat().st_size > 0


class BoringModel(fulmen.Module):
    """Lightning's BoringModel: a 32 -> 2 linear layer on random data."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)
        self.example_input_array = torch.rand(2, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self(batch).sum()

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> Any:
        return torch.utils.data.DataLoader(torch.randn(64, 32), batch_size=2)


def _scalars_and_plugins(log_dir: str) -> tuple[dict[str, list[float]], set[str]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(log_dir)
    events.Reload()
    scalars = {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    try:
        plugin = set(events.PluginTagToContent("hparams"))
    except KeyError:  # no summary of that plugin
        plugin = set()
    return scalars, plugin


def test_tensorboard_hparams_reload(tmp_path: Path) -> None:
    class CustomModel(BoringModel):
        def __init__(self, b1: float = 0.5, b2: float = 0.999) -> None:
            super().__init__()
            self.save_hyperparameters()

    trainer = fulmen.Trainer(max_steps=1, default_root_dir=tmp_path, enable_progress_bar=False)
    model = CustomModel()
    assert trainer.log_dir == trainer.logger.log_dir
    trainer.fit(model)
    assert trainer.log_dir == trainer.logger.log_dir
    folder_path = trainer.log_dir
    with open(os.path.join(folder_path, "hparams.yaml")) as file:
        import yaml

        yaml_params = yaml.safe_load(file)
    assert yaml_params == {"b1": 0.5, "b2": 0.999}
    assert len(os.listdir(os.path.join(folder_path, "checkpoints"))) == 1
    # the HPARAMS tab lists the run: hp_metric -1 (default_hp_metric) and the plugin's summaries
    scalars, plugin = _scalars_and_plugins(folder_path)
    assert scalars["hp_metric"] == [-1.0]
    assert {"_hparams_/experiment", "_hparams_/session_start_info",
            "_hparams_/session_end_info"} <= plugin


def test_tensorboard_log_sub_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class TestLogger(TensorBoardLogger):
        @property
        def version(self) -> str:  # for reproducibility
            return "version"

        @property
        def name(self) -> str:
            return "name"

    trainer_args: dict[str, Any] = dict(default_root_dir=tmp_path, max_steps=1)
    save_dir = tmp_path / "logs"
    trainer = fulmen.Trainer(**trainer_args, logger=TestLogger(save_dir))
    assert trainer.logger.log_dir == os.path.join(save_dir, "name", "version")
    trainer = fulmen.Trainer(**trainer_args, logger=TestLogger(save_dir, sub_dir="sub_dir"))
    assert trainer.logger.log_dir == os.path.join(save_dir, "name", "version", "sub_dir")
    # home dir (`~`) handling
    save_dir_home = "~/tmp"
    trainer = fulmen.Trainer(**trainer_args, logger=TestLogger(save_dir_home, sub_dir="sub_dir"))
    assert trainer.logger.log_dir == os.path.join(os.path.expanduser(save_dir_home), "name",
                                                  "version", "sub_dir")
    # env var (`$`) handling
    monkeypatch.setenv("test_env_dir", "some_directory")
    trainer = fulmen.Trainer(**trainer_args,
                             logger=TestLogger("$test_env_dir/tmp", sub_dir="sub_dir"))
    assert trainer.logger.log_dir == os.path.join("some_directory/tmp", "name", "version",
                                                  "sub_dir")


def _hparams() -> dict[str, Any]:
    import numpy as np

    return {"float": 0.3, "int": 1, "string": "abc", "bool": True, "dict": {"a": {"b": "c"}},
            "list": [1, 2, 3], "namespace": Namespace(foo=Namespace(bar="buzz")),
            "layer": torch.nn.BatchNorm1d, "tensor": torch.empty(2, 2, 2),
            "array": np.empty([2, 2, 2])}


def test_tensorboard_log_hyperparams(tmp_path: Path) -> None:
    logger = TensorBoardLogger(tmp_path)
    logger.log_hyperparams(_hparams())
    logger.finalize("success")
    scalars, plugin = _scalars_and_plugins(logger.log_dir)
    assert scalars == {"hp_metric": [-1.0]} and "_hparams_/experiment" in plugin


def test_tensorboard_log_hparams_and_metrics(tmp_path: Path) -> None:
    logger = TensorBoardLogger(tmp_path, default_hp_metric=False)
    logger.log_hyperparams(_hparams(), {"abc": torch.tensor([0.54])})
    logger.finalize("success")
    scalars, plugin = _scalars_and_plugins(logger.log_dir)
    assert scalars == {"abc": [pytest.approx(0.54)]} and "_hparams_/experiment" in plugin


def test_tensorboard_without_default_hp_metric_logs_no_placeholder(tmp_path: Path) -> None:
    logger = TensorBoardLogger(tmp_path, default_hp_metric=False)
    logger.log_hyperparams({"lr": 0.1})
    logger.finalize("success")
    scalars, plugin = _scalars_and_plugins(logger.log_dir)
    assert scalars == {} and not plugin


def test_tensorboard_prefix(tmp_path: Path) -> None:
    """Lightning's Fabric test: metric names start with the prefix and the join character."""
    logger = TensorBoardLogger(tmp_path, prefix="tmp")
    logger.log_metrics({"test": 1.0}, step=0)
    logger.finalize("success")
    scalars, _ = _scalars_and_plugins(logger.log_dir)
    assert scalars == {"tmp-test": [1.0]}


@pytest.mark.parametrize("example_input_array", [None, torch.rand(2, 32)])
def test_tensorboard_log_graph(tmp_path: Path, example_input_array: Any) -> None:
    """Both the module's example_input_array and an array given to log_graph."""
    model = BoringModel()
    if example_input_array is not None:
        model.example_input_array = None
    logger = TensorBoardLogger(tmp_path, log_graph=True)
    logger.log_graph(model, example_input_array)
    logger.finalize("success")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(logger.log_dir)
    events.Reload()
    assert events.Tags()["graph"]


def test_tensorboard_log_graph_when_fit_starts(tmp_path: Path) -> None:
    logger = TensorBoardLogger(tmp_path, log_graph=True)
    trainer = fulmen.Trainer(max_steps=1, logger=logger, enable_progress_bar=False,
                             enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(BoringModel())
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(logger.log_dir)
    events.Reload()
    assert events.Tags()["graph"]


def test_tensorboard_log_graph_warning_no_example_input_array(tmp_path: Path) -> None:
    model = BoringModel()
    model.example_input_array = None
    logger = TensorBoardLogger(tmp_path, log_graph=True)
    with pytest.warns(UserWarning, match="could not log the graph: set the module's "
                                         "example_input_array"):
        logger.log_graph(model)
    model.example_input_array = dict(x=1, y=2)
    with pytest.warns(UserWarning, match="could not log the graph: the input is a dict"):
        logger.log_graph(model)


def test_tensorboard_save_hparams_to_yaml_once(tmp_path: Path) -> None:
    logger = TensorBoardLogger(save_dir=tmp_path, default_hp_metric=False)
    trainer = fulmen.Trainer(max_steps=1, default_root_dir=tmp_path, logger=logger,
                             enable_progress_bar=False)
    assert trainer.log_dir == trainer.logger.log_dir
    trainer.fit(BoringModel())
    assert os.path.isfile(os.path.join(trainer.log_dir, "hparams.yaml"))
    assert not os.path.isfile(os.path.join(tmp_path, "hparams.yaml"))


def test_tensorboard_refuses_what_neither_it_nor_summarywriter_takes(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"TensorBoardLogger\(log_grpah=True\): this is "
                                                 r"neither .* SummaryWriter, which takes comment"):
        TensorBoardLogger(tmp_path, log_grpah=True)
    logger = TensorBoardLogger(tmp_path, comment="x", max_queue=5, flush_secs=1)
    assert logger.experiment is not None
    logger.finalize("success")
