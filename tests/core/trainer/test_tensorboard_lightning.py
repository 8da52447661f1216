"""Lightning's ``tests_pytorch/loggers/test_tensorboard.py``, ported to fulmen's names (those
that apply to fulmen's TensorBoardLogger).

Deliberate differences (also in docs/migrating.md):
- metrics and hyper-parameters are written by fulmen's own event file, not through
  ``logger.experiment`` (a ``SummaryWriter``, made only when used). Lightning's
  ``test_tensorboard_finalize`` mocks ``SummaryWriter`` and expects ``log_metrics`` to create
  and then flush and close it; here ``log_metrics`` creates no ``SummaryWriter`` at all, and
  ``finalize`` closes the metrics file.
- ``log_graph``, ``sub_dir``, ``default_hp_metric`` and the missing-folder warning are not
  ported: fulmen's logger does not take those arguments.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

pytest.importorskip("tensorboard")

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
