"""The four subcommands share one config, save it, write predictions, and name bad keys."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fulmen.cli import main

ROOT = Path(__file__).resolve().parents[3]
DIGITS = ROOT / "docs" / "examples"
pytestmark = pytest.mark.timeout(300)


def fulmen_cli(*args: str, cwd: Path, path: Path = DIGITS) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, "-m", "fulmen", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=280)


def test_the_demo_config_runs_under_every_subcommand(tmp_path):
    """digits.yaml holds test_after_fit; validate/test/predict accept it. One process, one epoch
    (the multi-process demo itself runs in test_cli_fit.py)."""
    common = ["--config", str(DIGITS / "digits.yaml"), "--trainer.default_root_dir",
              str(tmp_path), "--trainer.devices", "1", "--trainer.strategy", "auto",
              "--trainer.max_epochs", "1", "--trainer.enable_progress_bar", "false"]
    fit = fulmen_cli("fit", *common, cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    saved = tmp_path / "fulmen_logs" / "version_0" / "config.yaml"
    assert "class_path: digits.DigitsClassifier" in saved.read_text()
    assert "max_epochs: 1" in saved.read_text()
    best = next((tmp_path / "fulmen_logs" / "version_0" / "checkpoints").glob("epoch=*.ckpt"))
    for stage in ("validate", "test"):
        done = fulmen_cli(stage, *common, "--ckpt_path", str(best), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    out = tmp_path / "preds"
    done = fulmen_cli("predict", *common, "--ckpt_path", str(best), "--predictions_dir",
                      str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"predictions written to {out / 'predictions_rank0.pt'}" in done.stderr  # logging
    written = torch.load(out / "predictions_rank0.pt", weights_only=True)
    assert len(written["predictions"]) == len(written["batch_indices"]) > 0
    assert written["predictions"][0].dtype == torch.int64  # class indices from predict_step


def test_a_config_left_by_another_run_is_not_overwritten(tmp_path):
    fixtures = ROOT / "tests" / "fixtures"
    config = tmp_path / "run.yaml"
    config.write_text("trainer:\n  max_epochs: 1\n  logger: false\n  enable_progress_bar: false\n"
                      f"  default_root_dir: {tmp_path / 'out'}\n"
                      "model:\n  class_path: tiny_models.TinyModule\n"
                      "data:\n  class_path: tiny_models.TinyData\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "config.yaml").write_text("from: another run\n")
    done = fulmen_cli("fit", "--config", str(config), cwd=tmp_path, path=fixtures)
    assert done.returncode == 2
    assert "exists (from an earlier run)" in done.stderr and "--save_config overwrite" in \
        done.stderr and "Traceback" not in done.stderr
    done = fulmen_cli("fit", "--config", str(config), "--save_config", "overwrite", cwd=tmp_path,
                      path=fixtures)
    assert done.returncode == 0, done.stderr
    assert "tiny_models.TinyModule" in (tmp_path / "out" / "config.yaml").read_text()


@pytest.mark.parametrize(("content", "message"), [
    (None, "does not exist"),
    ("", "is empty: it needs at least `model:`"),
    ("- a list\n", "holds a list, not a mapping"),
    ("trainer: {max_epoch: 3}\n", "unknown key 'trainer.max_epoch'; did you mean "
                                  "'trainer.max_epochs'?"),
    ("modle: {class_path: x.Y}\n", "unknown key 'modle'; did you mean 'model'?"),
    ("trainer: [unclosed\n", "is not valid YAML"),
])
def test_bad_config_files_name_the_file_and_key(tmp_path, content, message):
    config = tmp_path / "bad.yaml"
    if content is not None:
        config.write_text(content)
    done = fulmen_cli("fit", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 2
    assert str(config) in done.stderr and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_bare_fulmen_prints_help_and_version_lists_plugin_distributions(capsys):
    assert main([]) == 0
    assert "usage: fulmen" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("fulmen ")
    assert "fulmen-strategies" in out and "torch " in out


def test_help_lists_the_registered_names(tmp_path):
    done = fulmen_cli("fit", "--help", cwd=tmp_path)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "registered strategy name. Registered now: ddp," in text
    assert "ddp_spawn" in text and "bf16-mixed" in text and "slurm" in text


def test_doctor_reports_versions_variables_detection_and_the_port(tmp_path):
    import json
    import socket

    with socket.socket() as busy:
        busy.bind(("", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "MASTER_PORT": str(port), "SLURM_NTASKS": "2",
               "SLURM_JOB_ID": "77"}
        done = subprocess.run([sys.executable, "-m", "fulmen", "doctor", "--json"],
                              capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["versions"]["fulmen-strategies"] and data["torch"]["backends"]["gloo"] is True
    assert data["variables"]["SLURM_NTASKS"] == "2"
    assert data["variables"]["MASTER_PORT"] == str(port)
    assert data["main_port"] == {"port": port, "free": False}
    assert {a["plugin"] for a in data["detection"]["environment"]} >= {"local", "slurm"}
    text = subprocess.run([sys.executable, "-m", "fulmen", "doctor"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert text.returncode == 0 and "Main port 29500" in text.stdout and "Detection:" in text.stdout
