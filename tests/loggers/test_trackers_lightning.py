"""Ports of Lightning's tracker tests (``tests_pytorch/loggers/test_mlflow.py``,
``test_wandb.py``, ``test_comet.py``) to fulmen's loggers, against the real libraries.

Deliberate differences (also in docs/migrating.md, "Loggers"):

- Lightning's tests replace ``mlflow``, ``wandb`` and ``comet_ml`` with mocks and assert on the
  calls; here the real clients run (MLflow on a local SQLite database, W&B and Comet offline) and
  the tests read back what the tracker stored.
- MLflow: parameter values are cut at MLflow's limit, 6000 characters (Lightning: 250); without a
  tracking URI the store is ``sqlite:///<save_dir>/mlflow.db`` (MLflow 3 refuses Lightning's
  ``file:`` store); with ``log_model="all"`` a checkpoint ``ModelCheckpoint`` replaced is deleted
  from the run's artifacts too (Lightning keeps every upload); ``finalize("interrupted")`` ends the
  run ``KILLED``.
- W&B: ``offline=True`` with ``log_model`` raises fulmen's ``ConfigurationError`` (Lightning's
  ``MisconfigurationException`` is the same class under ``fulmen run``).
- Comet: the experiment is created on first use rather than in the constructor, so ``version``
  is None until then (Lightning: the key of the experiment its constructor created).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from tiny_models import TinyData, TinyModule

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import ModelCheckpoint

FLAGS = {"accelerator": "cpu", "devices": 1, "log_every_n_steps": 1, "enable_progress_bar": False,
         "enable_model_summary": False, "num_sanity_val_steps": 0}


@pytest.fixture(scope="module")
def mlflow_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One local MLflow database for the module (its schema is made once)."""
    return str(tmp_path_factory.mktemp("mlruns"))


def mlflow_logger(save_dir: str, *args: Any, **kwargs: Any) -> Any:
    from fulmen.loggers import MLFlowLogger

    return MLFlowLogger(*args, save_dir=save_dir, **kwargs)


# ------------------------------------------------------------------ MLflow


@pytest.mark.slow
def test_mlflow_logger_exists(mlflow_dir):
    """Loggers with the same experiment name share the experiment, each with its own run."""
    first = mlflow_logger(mlflow_dir, "test")
    assert first._run_id is None and first.version is None  # nothing made yet
    second = mlflow_logger(mlflow_dir, "test")
    assert second.experiment_id == first.experiment_id
    assert second.run_id != first.run_id
    third = mlflow_logger(mlflow_dir, "new")
    assert third.experiment_id != first.experiment_id


@pytest.mark.slow
def test_mlflow_run_name_setting(mlflow_dir):
    from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME

    logger = mlflow_logger(mlflow_dir, "names", run_name="run-name-1")
    assert logger.experiment.get_run(logger.run_id).data.tags[MLFLOW_RUN_NAME] == "run-name-1"
    logger = mlflow_logger(mlflow_dir, "names", run_name="run-name-1",
                           tags={MLFLOW_RUN_NAME: "run-name-2"})
    with pytest.warns(UserWarning, match="replaced by run_name='run-name-1'"):
        run_id = logger.run_id
    assert logger.experiment.get_run(run_id).data.tags[MLFLOW_RUN_NAME] == "run-name-1"


@pytest.mark.slow
def test_mlflow_run_id_setting(mlflow_dir):
    first = mlflow_logger(mlflow_dir, "ids")
    again = mlflow_logger(mlflow_dir, "ids", run_id=first.run_id)
    assert again.run_id == first.run_id and again.experiment_id == first.experiment_id


@pytest.mark.slow
def test_mlflow_logger_with_unexpected_characters(mlflow_dir):
    logger = mlflow_logger(mlflow_dir, "chars")
    with pytest.warns(RuntimeWarning, match="special characters in metric name"):
        logger.log_metrics({"[some_metric]": 10})
    assert logger.read_run().metrics == {"some_metric": [(0, 10.0)]}


@pytest.mark.slow
def test_mlflow_logger_with_long_and_many_params(mlflow_dir):
    logger = mlflow_logger(mlflow_dir, "params")
    logger.log_hyperparams({"test": "test_param" * 1000,
                            **{f"test_{i}": f"test_param_{i}" for i in range(150)}})
    params = logger.read_run().params
    assert len(params) == 151 and len(params["test"]) == 6000  # Lightning: 250


@pytest.mark.slow
@pytest.mark.parametrize(("status", "expected"), [("success", "FINISHED"), ("failed", "FAILED"),
                                                  ("finished", "FINISHED"),
                                                  ("interrupted", "KILLED")])
def test_mlflow_logger_finalize(mlflow_dir, status, expected):
    logger = mlflow_logger(mlflow_dir, "finalize")
    _ = logger.experiment
    logger.finalize(status)
    assert logger.experiment.get_run(logger.run_id).info.status == expected


@pytest.mark.slow
def test_mlflow_logger_finalize_without_a_run(mlflow_dir):
    logger = mlflow_logger(mlflow_dir, "never-made")
    logger.finalize("failed")  # no run was made: nothing to end, nothing created
    assert logger.version is None


@pytest.mark.slow
@pytest.mark.parametrize("log_model", ["all", True, False])
def test_mlflow_log_model(mlflow_dir, log_model, tmp_path):
    logger = mlflow_logger(mlflow_dir, f"log-model-{log_model}", log_model=log_model)
    trainer = fulmen.Trainer(logger=logger, max_epochs=2, limit_train_batches=3,
                             limit_val_batches=3, default_root_dir=str(tmp_path), **FLAGS)
    trainer.fit(TinyModule(), TinyData(n=32))
    artifacts = logger.read_run().artifacts
    # the default ModelCheckpoint keeps the newest file: "all" uploaded epoch 0 then replaced it
    assert artifacts == ([] if log_model is False else ["epoch_1-step_6"])


# ------------------------------------------------------------------ W&B


def test_wandb_project_name(monkeypatch):
    from fulmen.loggers import WandbLogger

    assert WandbLogger(offline=True).name == "lightning_logs"
    monkeypatch.setenv("WANDB_PROJECT", "my_project")
    assert WandbLogger(offline=True).name == "my_project"
    assert WandbLogger(offline=True, project="given").name == "given"


def test_wandb_logger_offline_log_model():
    from fulmen.loggers import WandbLogger

    with pytest.raises(ConfigurationError, match="checkpoints cannot be uploaded by an offline"):
        WandbLogger(offline=True, log_model=True)


@pytest.mark.slow
def test_wandb_pickle_keeps_the_run_not_the_process(tmp_path):
    """A pickled logger (spawned workers) continues the run rather than making another."""
    from fulmen.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="pickle")
    assert logger.version is None
    run_id = logger.experiment.id
    copy = pickle.loads(pickle.dumps(logger))
    assert copy.version == run_id and copy._experiment is None
    logger.finalize("success")


def return_something() -> str:
    return "something"


class CallableParams(TinyModule):
    def __init__(self, fn: Any = return_something, cls: Any = Path) -> None:
        super().__init__()
        self.save_hyperparameters()


@pytest.mark.slow
def test_wandb_hyperparameters_sanitize_callables(tmp_path):
    from fulmen.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="params")
    fulmen.Trainer(logger=logger, max_steps=1, default_root_dir=str(tmp_path), **FLAGS).fit(
        CallableParams(), TinyData(n=16))
    params = logger.read_run().params
    assert params["fn"].endswith(":return_something") and params["cls"] == "pathlib:Path"
    assert params["lr"] == 0.1


# ------------------------------------------------------------------ Comet


def comet_logger(tmp_path: Path, **kwargs: Any) -> Any:
    from fulmen.loggers import CometLogger

    return CometLogger(**{"online": False, "offline_directory": str(tmp_path / "comet"),
                          "log_code": False, "log_env_details": False,
                          "log_git_metadata": False, "log_git_patch": False, **kwargs})


def test_comet_deprecated_arguments_still_work(tmp_path):
    from fulmen.loggers import CometLogger

    with pytest.warns(DeprecationWarning, match="project_name=...\\) is deprecated"):
        logger = CometLogger(project_name="old", offline=True, save_dir=str(tmp_path))
    assert logger.name == "old" and logger.save_dir == str(tmp_path)


def test_comet_version_and_epoch_logging(tmp_path):
    logger = comet_logger(tmp_path, project="epochs")
    assert logger.version is None  # no experiment yet (Lightning: created in __init__)
    logger.log_metrics({"test": 1, "epoch": 1}, step=123)
    key = logger.version
    assert key is not None
    logger.finalize("success")
    run = logger.read_run()
    assert run.metrics == {"test": [(123, 1.0)]}  # epoch goes as Comet's epoch, not a metric


@pytest.mark.slow
def test_mlflow_resume_after_a_kill_writes_no_step_twice(mlflow_dir, tmp_path):
    """Not a Lightning test: a job killed after its step-3 checkpoint had logged steps 3..5 too;
    the resumed fit continues the run and MLflow holds each step once."""
    every3 = ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=3, save_top_k=-1)
    first = mlflow_logger(mlflow_dir, "killed")
    fulmen.Trainer(logger=first, max_steps=6, callbacks=[every3], enable_checkpointing=True,
                   default_root_dir=str(tmp_path), **FLAGS).fit(TinyModule(), TinyData(n=64))
    again = mlflow_logger(mlflow_dir, "killed")
    fulmen.Trainer(logger=again, max_steps=9, default_root_dir=str(tmp_path), **FLAGS).fit(
        TinyModule(), TinyData(n=64), ckpt_path=str(tmp_path / "ckpt" / "epoch=0-step=3.ckpt"))
    assert again.version == first.version
    assert [s for s, _ in again.read_run().metrics["train_loss"]] == list(range(9))
