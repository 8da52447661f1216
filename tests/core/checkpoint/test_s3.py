"""Checkpoints and logs on s3:// against a real S3-compatible HTTP server (moto's standalone
server, started by the tests) through s3fs: ModelCheckpoint's top-k rotation and ``last``
(a copy on object stores, also for ``"link"``), ``default_root_dir`` and logger ``save_dir``
as URLs, resume from ``ckpt_path="last"``, and a training process SIGKILLed mid-run that
resumes from s3://."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from processes import clean_environment
from s3_server import S3, s3_endpoint  # noqa: F401 - the fixture
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.api.checkpoint_io import TorchCheckpointIO
from fulmen.callbacks import ModelCheckpoint
from fulmen.checkpoint import tool
from fulmen.loggers import CSVLogger

pytestmark = pytest.mark.timeout(180)
SCRIPTS = Path(__file__).parent / "scripts"


def test_top_k_last_link_logs_and_resume_on_s3(s3_endpoint: S3,  # noqa: F811
                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = f"s3://{s3_endpoint.bucket()}/run"
    checkpoint = ModelCheckpoint(dirpath=f"{run}/ckpt/", every_n_train_steps=2, save_top_k=2,
                                 monitor="step", mode="max", save_last="link")
    trainer = fulmen.Trainer(**{**lean(max_epochs=1), "enable_checkpointing": True,
                                "logger": CSVLogger(f"{run}/logs")},
                             callbacks=[checkpoint], log_every_n_steps=1)
    trainer.fit(TinyModule(), loader(64))  # 8 steps: saves at 2, 4, 6, 8
    assert checkpoint.dirpath == f"{run}/ckpt"
    assert s3_endpoint.ls(checkpoint.dirpath) == \
        ["epoch=0-step=6.ckpt", "epoch=0-step=8.ckpt", "last.ckpt"]  # top 2 kept, no temps
    assert checkpoint.best_model_path == f"{run}/ckpt/epoch=0-step=8.ckpt"
    io = TorchCheckpointIO()
    last = io.load_checkpoint(checkpoint.last_model_path)
    newest = io.load_checkpoint(checkpoint.best_model_path)
    assert last["global_step"] == newest["global_step"] == 8  # "link" is a copy on S3
    assert s3_endpoint.ls(f"{run}/logs/fulmen_logs/version_0") == ["hparams.yaml", "metrics.csv"]
    with s3_endpoint.fs.open(f"{run}/logs/fulmen_logs/version_0/metrics.csv".removeprefix(
            "s3://"), "r") as handle:
        rows = handle.read().splitlines()
    assert rows[0].startswith("step") and len(rows) == 1 + 8
    capsys.readouterr()
    assert tool.main(["inspect", checkpoint.last_model_path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["progress"]["global_step"] == 8
    assert tool.main(["diff", checkpoint.best_model_path, checkpoint.last_model_path]) == 0
    assert tool.main(["verify", f"{run}/ckpt/none.ckpt"]) == 2
    assert f"{run}/ckpt/none.ckpt' does not exist" in capsys.readouterr().err

    resumed = fulmen.Trainer(**{**lean(max_epochs=2), "enable_checkpointing": True},
                             callbacks=[ModelCheckpoint(dirpath=f"{run}/ckpt",
                                                        every_n_train_steps=2, save_top_k=2,
                                                        monitor="step", mode="max",
                                                        save_last=True)])
    resumed.fit(TinyModule(), loader(64), ckpt_path="last")
    assert resumed.ckpt_path == f"{run}/ckpt/last.ckpt"
    assert resumed.global_step == 16
    assert s3_endpoint.ls(f"{run}/ckpt") == \
        ["epoch=1-step=14.ckpt", "epoch=1-step=16.ckpt", "last.ckpt"]


def test_default_root_dir_on_s3_holds_the_default_checkpoints(s3_endpoint: S3  # noqa: F811
                                                              ) -> None:
    root = f"s3://{s3_endpoint.bucket()}/root"
    trainer = fulmen.Trainer(**{**lean(max_epochs=1, limit_train_batches=3),
                                "enable_checkpointing": True}, default_root_dir=root + "/")
    assert trainer.default_root_dir == root
    trainer.fit(TinyModule(), loader(64))
    assert s3_endpoint.ls(f"{root}/checkpoints") == ["epoch=0-step=3.ckpt"]
    model = TinyModule.load_from_checkpoint(f"{root}/checkpoints/epoch=0-step=3.ckpt")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                  trainer.lightning_module.state_dict().values()))


@pytest.mark.parametrize("async_save", [False, True], ids=["sync", "async"])
def test_a_run_killed_midway_resumes_from_s3(s3_endpoint: S3, tmp_path: Path,  # noqa: F811
                                             async_save: bool) -> None:
    dirpath = f"s3://{s3_endpoint.bucket()}/killed"
    env = {**clean_environment([SCRIPTS]), **s3_endpoint.env, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(SCRIPTS / "s3_run.py"), "--dirpath", dirpath]
    command += ["--async-save"] if async_save else []
    killed = subprocess.run([*command, "--kill-at", "11"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    left = s3_endpoint.ls(dirpath)
    if async_save:  # killed in step 11, maybe while step 10's checkpoint or link was written
        assert {"epoch=0-step=8.ckpt", "last.ckpt"} <= set(left) <= \
            {"epoch=0-step=6.ckpt", "epoch=0-step=8.ckpt", "epoch=1-step=10.ckpt", "last.ckpt"}
    else:
        assert left == ["epoch=0-step=8.ckpt", "epoch=1-step=10.ckpt", "last.ckpt"]
    for name in left:  # every object under a real name is a complete checkpoint
        assert TorchCheckpointIO().load_checkpoint(f"{dirpath}/{name}")["global_step"] >= 6
    resumed = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True,
                             timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    start = resumed.stdout.split()
    assert start in (["start", "10", "end", "16"], ["start", "8", "end", "16"]
                     ) if async_save else start == ["start", "10", "end", "16"]
    assert TorchCheckpointIO().load_checkpoint(f"{dirpath}/last.ckpt")["global_step"] == 16
    if not async_save:
        # "last" resolves to last.ckpt or to the step-10 file it copies (the newer one on the
        # store's clock, which counts whole seconds); the file a run resumed from is kept
        assert set(s3_endpoint.ls(dirpath)) - {"epoch=1-step=10.ckpt"} == \
            {"epoch=1-step=14.ckpt", "epoch=1-step=16.ckpt", "last.ckpt"}
