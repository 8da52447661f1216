"""W&B, MLflow and Comet for real: W&B and Comet offline (their own run files and archives), MLflow
against a tracking server these tests start (SQLite backend, loopback), every run read back with
the tracker's own client or files. Under ddp (2 processes, gloo), resumed from checkpoints, with
checkpoints as artifacts, and with the tracker down.

The exhaustive runs (a server, ddp for every tracker) are marked slow; ``make test`` runs the
kit over the five loggers, W&B under ddp, and the failure and Lightning-name paths.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tiny_models import TinyData, TinyModule

import fulmen
from fulmen.callbacks import ModelCheckpoint
from fulmen.errors import LoggerWarning
from fulmen.testing.logger_checks import module, steps_problems

SCRIPT = Path(__file__).parent / "scripts" / "ddp_logged.py"
FLAGS = {"accelerator": "cpu", "devices": 1, "log_every_n_steps": 1, "enable_progress_bar": False,
         "enable_model_summary": False, "num_sanity_val_steps": 0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mlflow server`` on loopback with a SQLite backend and served artifacts (the job runner
    off: it starts a dozen worker processes)."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    log = (root / "server.log").open("w")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
         "--artifacts-destination", str(root / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            if server.poll() is not None:
                raise RuntimeError("mlflow server exited: "
                                   + (root / "server.log").read_text()[-2000:]) from None
            time.sleep(0.5)
    else:
        server.kill()
        raise RuntimeError("mlflow server did not answer in 180 s")
    yield uri
    os.killpg(server.pid, 15)
    server.wait(timeout=30)
    log.close()


def run_script(*args: str, timeout: int = 300) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_SILENT": "true"}
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-4000:]


def ranks(out: Path) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


# ------------------------------------------------------------------ every logger, the kit


def test_the_five_loggers_pass_the_kit():
    """``fulmen plugins --check`` for csv, tensorboard, wandb, mlflow and comet: one fit, a
    resumed fit, a failed fit and a non-zero rank each, read back by the tracker's reader."""
    from fulmen.testing import Runner, select_targets

    report = Runner(timeout=300).run(select_targets(
        ["csv", "tensorboard", "wandb", "mlflow", "comet"]))
    assert report.ok, [r.as_dict() for r in report.failures]
    assert {r.name for r in report.results} == {"csv", "tensorboard", "wandb", "mlflow", "comet"}
    assert not [r for r in report.results if r.status == "skip"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["csv", "tensorboard", "wandb", "mlflow", "comet"])
def test_each_logger_by_name_under_ddp_makes_one_run(tmp_path, name, monkeypatch):
    """``Trainer(logger=NAME, strategy="ddp", devices=2)``: one run, each step once, the
    hyper-parameters, read back by the logger (W&B and Comet offline through their own
    settings, MLflow in <default_root_dir>/mlruns)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("COMET_START_ONLINE", "false")
    run_script(name, str(tmp_path), "--by-name")
    first, second = ranks(tmp_path)
    assert first["runs"] == 1 and first["steps"] == list(range(6)), first
    assert {"lr", "loss_fn"} <= {p.split("/")[0] for p in first["params"]}, first["params"]
    assert first["status"] in (None, "success")
    assert second["version"] in (None, first["version"])


# ------------------------------------------------------------------ W&B


def test_wandb_offline_one_run_across_fit_and_test(tmp_path):
    from fulmen_wandb.run_files import read_run

    from fulmen.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="fulmen-tests")
    trainer = fulmen.Trainer(logger=logger, max_epochs=2, default_root_dir=str(tmp_path), **FLAGS)
    trainer.fit(TinyModule(lr=0.05), TinyData(n=32))
    trainer.test(TinyModule(), TinyData(n=32))
    assert logger.read_run() is not None  # (waits for wandb's core to write the file)
    runs = read_run(tmp_path / "wandb")
    assert list(runs) == [logger.version]
    run = runs[logger.version]
    assert run["config"]["lr"] == 0.05 and run["exit_codes"] == [0, 0]
    steps = [row["trainer/global_step"] for row in run["history"] if "train_loss" in row]
    assert steps == list(range(8))
    assert any("test_acc" in row for row in run["history"])


def test_wandb_under_ddp_makes_one_run(tmp_path):
    """Two processes, one run: rank 1 creates none (Lightning's duplicate-run bug)."""
    from fulmen_wandb.run_files import read_run

    run_script("wandb", str(tmp_path))
    first, second = ranks(tmp_path)
    assert first["world_size"] == 2 and second["version"] is None
    runs = read_run(tmp_path / "wandb")
    assert list(runs) == [first["version"]]
    steps = [r["trainer/global_step"] for r in runs[first["version"]]["history"]
             if "train_loss" in r]
    assert steps == list(range(6))


@pytest.mark.slow
def test_wandb_ddp_resume_continues_the_run_and_never_means_never(tmp_path):
    from fulmen_wandb.run_files import read_run

    from fulmen.loggers import WandbLogger

    run_script("wandb", str(tmp_path), "--steps", "3")
    run_script("wandb", str(tmp_path), "--steps", "6", "--resume", str(tmp_path / "after-3.ckpt"))
    runs = read_run(tmp_path / "wandb")
    (run_id,) = runs
    assert ranks(tmp_path)[0]["version"] == run_id
    steps = [r["trainer/global_step"] for r in runs[run_id]["history"] if "train_loss" in r]
    assert steps == list(range(6))
    # resume="never": a new run, as asked (Lightning resumed anyway)
    fresh = WandbLogger(save_dir=str(tmp_path), offline=True, project="ddp", resume="never")
    fulmen.Trainer(logger=fresh, max_steps=8, default_root_dir=str(tmp_path), **FLAGS).fit(
        module(), ckpt_path=str(tmp_path / "after-6.ckpt"), weights_only=False)
    assert fresh.read_run() is not None  # (waits for wandb's core to write the file)
    assert fresh.version != run_id and set(read_run(tmp_path / "wandb")) == {run_id,
                                                                             fresh.version}


# ------------------------------------------------------------------ MLflow


def test_mlflow_down_is_reported_once_and_training_goes_on(tmp_path, monkeypatch):
    from fulmen.loggers import MLFlowLogger

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    logger = MLFlowLogger(tracking_uri=f"http://127.0.0.1:{free_port()}")
    trainer = fulmen.Trainer(logger=logger, max_steps=5, default_root_dir=str(tmp_path), **FLAGS)
    with pytest.warns(LoggerWarning) as caught:
        trainer.fit(TinyModule(), TinyData(n=64))
    failures = [w for w in caught if issubclass(w.category, LoggerWarning)]
    assert len(failures) == 1 and "MLFlowLogger failed in log_hyperparams" in \
        str(failures[0].message)
    assert trainer.global_step == 5


@pytest.mark.slow
def test_mlflow_server_checkpoints_resume_and_names(tmp_path, mlflow_server):
    """log_model="all" with top-k: uploaded under names MLflow 3 accepts, deletions mirrored;
    a resumed fit continues the run (RUNNING again, then FINISHED) with each step once."""
    from mlflow import MlflowClient

    from fulmen.loggers import MLFlowLogger

    logger = MLFlowLogger(tracking_uri=mlflow_server, experiment_name="server",
                          run_name="digits", tags={"team": "fulmen"}, log_model="all")
    checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="epoch", mode="max",
                                 save_top_k=1, save_last=True)
    trainer = fulmen.Trainer(logger=logger, max_epochs=2, callbacks=[checkpoint],
                             enable_checkpointing=True, default_root_dir=str(tmp_path), **FLAGS)
    trainer.fit(TinyModule(), TinyData(n=32))
    client = MlflowClient(mlflow_server)
    run = client.get_run(logger.version)
    assert run.info.status == "FINISHED" and run.data.tags["team"] == "fulmen"
    assert run.info.run_name == "digits"
    names = sorted(a.path.split("/")[-1] for a in client.list_artifacts(logger.version,
                                                                        "checkpoints"))
    assert names == ["epoch_1-step_8", "last"]  # epoch=0-step=4 was dropped from the top 1
    meta = client.download_artifacts(logger.version, "checkpoints/epoch_1-step_8/metadata.yaml",
                                     str(tmp_path))
    assert "epoch=1-step=8.ckpt" in Path(meta).read_text()
    # resumed from the last checkpoint by a new logger: the same run, each step once
    again = MLFlowLogger(tracking_uri=mlflow_server, experiment_name="server")
    fulmen.Trainer(logger=again, max_epochs=3, default_root_dir=str(tmp_path), **FLAGS).fit(
        TinyModule(), TinyData(n=32), ckpt_path=checkpoint.last_model_path)
    assert again.version == logger.version
    problems = steps_problems(again.read_run(), list(range(12)))
    assert not problems, problems
    assert client.get_run(logger.version).info.status == "FINISHED"


@pytest.mark.slow
def test_mlflow_server_under_ddp(tmp_path, mlflow_server):
    from mlflow import MlflowClient

    run_script("mlflow", str(tmp_path), "--tracking-uri", mlflow_server)
    first, second = ranks(tmp_path)
    assert second["version"] is None
    client = MlflowClient(mlflow_server)
    experiment = client.get_experiment_by_name("ddp")
    assert [r.info.run_id for r in client.search_runs([experiment.experiment_id])] == \
        [first["version"]]
    history = client.get_metric_history(first["version"], "train_loss")
    assert [m.step for m in history] == list(range(6))
    params = client.get_run(first["version"]).data.params
    assert params["activation/class_path"] == "torch.nn.modules.activation.Tanh"
    assert params["loss_fn"] == "torch.nn.functional:mse_loss"


# ------------------------------------------------------------------ Comet


@pytest.mark.slow
def test_comet_offline_under_ddp_and_resumed(tmp_path):
    from fulmen_comet.logger import CometLogger

    run_script("comet", str(tmp_path), "--steps", "3")
    run_script("comet", str(tmp_path), "--steps", "6", "--resume", str(tmp_path / "after-3.ckpt"))
    first, second = ranks(tmp_path)
    assert second["version"] == first["version"]  # known from the checkpoint, never created
    reader = CometLogger(online=False, offline_directory=str(tmp_path / "comet"),
                         experiment_key=first["version"])
    run = reader.read_run()
    assert run is not None and run.runs == 1
    assert not steps_problems(run, list(range(6)))


# ------------------------------------------------------------------ Lightning scripts


LIGHTNING_SCRIPT = """
    import sys
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    import lightning.pytorch as pl
    from lightning.pytorch.loggers import CometLogger, MLFlowLogger, WandbLogger


    class Model(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.save_hyperparameters()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch[0]).pow(2).mean()
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)


    out = sys.argv[1]
    loggers = [WandbLogger(save_dir=out, offline=True, project="lightning"),
               MLFlowLogger(experiment_name="lightning", save_dir=out + "/mlruns"),
               CometLogger(online=False, offline_directory=out + "/comet", log_code=False)]
    trainer = pl.Trainer(max_steps=3, logger=loggers, log_every_n_steps=1,
                         enable_progress_bar=False, enable_checkpointing=False)
    data = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
    trainer.fit(Model(), data)
    for logger in loggers:
        run = logger.read_run()
        print(type(logger).__name__, [s for s, _ in run.metrics["loss"]])
"""


@pytest.mark.slow
def test_lightning_scripts_with_the_trackers_run_through_fulmen_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(LIGHTNING_SCRIPT))
    done = subprocess.run([sys.executable, "-m", "fulmen", "run", str(script), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "WANDB_SILENT": "true"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("WandbLogger", "MLFlowLogger", "CometLogger"):
        assert f"{name} [0, 1, 2]" in done.stdout, done.stdout[-3000:]


@pytest.mark.slow
def test_wandb_under_ddp_spawn_makes_one_run_the_main_process_knows(tmp_path):
    """Spawned workers: rank 0 makes the run; the caller's logger learns its id (and a later
    stage in the main process continues it)."""
    from fulmen_wandb.run_files import read_run

    from fulmen.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="spawn")
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", logger=logger,
                             max_steps=4, log_every_n_steps=1, enable_progress_bar=False,
                             enable_model_summary=False, enable_checkpointing=False,
                             num_sanity_val_steps=0, default_root_dir=str(tmp_path))
    trainer.fit(module())
    assert logger.version is not None
    logger.log_metrics({"after": 1.0}, step=4)  # the caller continues the same run
    logger.finalize("success")
    assert logger.read_run() is not None
    runs = read_run(tmp_path / "wandb")
    assert list(runs) == [logger.version]
