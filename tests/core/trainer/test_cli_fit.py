"""``fulmen fit|validate|test|predict`` from config files, run as real commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
pytestmark = pytest.mark.timeout(180)

CONFIG = """\
seed_everything: 1
trainer:
  max_epochs: 2
  default_root_dir: {root}
  enable_progress_bar: false
  enable_model_summary: false
  logger: false
model:
  class_path: tiny_models.TinyModule
  init_args:
    lr: 0.05
data:
  class_path: tiny_models.TinyData
  init_args:
    n: 32
"""


def fulmen_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(FIXTURES)}
    return subprocess.run([sys.executable, "-m", "fulmen", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=170)


def test_fit_then_test_from_a_config(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    done = fulmen_cli("fit", "--config", str(config), "--trainer.max_epochs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    checkpoints = list(tmp_path.glob("checkpoints/*.ckpt"))
    assert [c.name for c in checkpoints] == ["epoch=0-step=4.ckpt"]
    done = fulmen_cli("test", "--config", str(config), "--ckpt_path", str(checkpoints[0]),
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "test_acc" in done.stderr  # the results table goes through the `fulmen` logger


def test_print_config_shows_the_resolved_config(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    done = fulmen_cli("fit", "--config", str(config), "--print_config", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "class_path: tiny_models.TinyModule" in done.stdout
    assert "lr: 0.05" in done.stdout and "max_epochs: 2" in done.stdout


def test_help_lists_trainer_flags(tmp_path):
    done = fulmen_cli("fit", "--help", cwd=tmp_path)
    assert done.returncode == 0
    for flag in ("--trainer.max_epochs", "--trainer.precision", "--trainer.devices",
                 "--model CONFIG | CLASS_PATH_OR_NAME | .INIT_ARG_NAME VALUE"):
        assert flag in done.stdout


@pytest.mark.parametrize(("override", "message"), [
    (["--trainer.max_epochs", "many"], 'Parser key "trainer.max_epochs"'),
    (["--trainer.precision", "17"], "precision=17 is not a registered precision name"),
    (["--model.init_args.lr", "fast"], 'Parser key "lr"'),
    (["--trainer.max_epoch", "3"], "--trainer.max_epoch"),
    (["--trainer.max_epochz", "3"], "--trainer.max_epochz"),
])
def test_config_errors_name_the_key(tmp_path, override, message):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    done = fulmen_cli("fit", "--config", str(config), *override, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_the_demo_config_reaches_95_percent_on_digits(tmp_path):
    env_path = f"{ROOT / 'docs' / 'examples'}"
    done = subprocess.run(
        [sys.executable, "-m", "fulmen", "fit", "--config",
         str(ROOT / "docs" / "examples" / "digits.yaml"), "--trainer.default_root_dir",
         str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=170,
        env={**os.environ, "PYTHONPATH": env_path})
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("test_acc"))
    assert float(line.split()[-1]) >= 0.95, done.stderr
    assert list((tmp_path / "fulmen_logs" / "version_0" / "checkpoints").glob("*.ckpt"))
