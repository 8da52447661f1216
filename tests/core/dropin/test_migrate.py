"""``fulmen migrate``: Lightning 1.x/2.x scripts rewritten with libcst run on fulmen under plain
``python``; what cannot be migrated is listed as file:line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fulmen.dropin.migrate import main, migrate_source

OLD = '''\
"""A Lightning 1.x script."""
import argparse

import torch
import pytorch_lightning as pl  # the framework
from pytorch_lightning import LightningModule, Trainer, seed_everything
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader


class Model(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.started = False

    def training_step(self, batch, batch_idx):
        return self.layer(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        return self.layer(batch).pow(2).mean()

    def validation_epoch_end(self, outs):
        """Average the losses."""
        # one value per batch
        self.log("val_loss", torch.stack(outs).mean())
        print("EPOCH_END", len(outs))

    def on_pretrain_routine_start(self):
        self.started = True

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(torch.randn(8, 4), batch_size=4)

    def val_dataloader(self):
        return DataLoader(torch.randn(12, 4), batch_size=4)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser = Trainer.add_argparse_args(parser)
    args = parser.parse_args()
    seed_everything(1)
    model = Model()
    trainer = Trainer.from_argparse_args(
        args, logger=False, enable_progress_bar=False, num_sanity_val_steps=0,
        callbacks=[pl.callbacks.ModelCheckpoint(dirpath=".", monitor="val_loss")],
    )
    trainer.fit(model)
    assert model.started
    print("DONE", trainer.global_step, trainer.checkpoint_callback.best_model_score is not None)
'''


def test_rewrites_imports_hooks_and_argparse(tmp_path: Path) -> None:
    result = migrate_source(OLD)
    new = result.new
    assert "import fulmen as pl  # the framework" in new
    assert "from fulmen import Module as LightningModule, Trainer, seed_everything" in new
    assert "from fulmen.callbacks import ModelCheckpoint" in new
    assert "from fulmen.utilities.argparse import add_argparse_args, from_argparse_args" in new
    assert "parser = add_argparse_args(Trainer, parser)" in new
    assert "def on_validation_epoch_end(self):\n        \"\"\"Average the losses.\"\"\"\n" \
           "        outs = getattr(self, \"validation_step_outputs\", [])" in new
    assert "def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):" in new
    assert "def on_fit_start(self):" in new and "# one value per batch" in new
    assert result.notes == []
    script = tmp_path / "train.py"
    script.write_text(new)
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, str(script), "--max_epochs", "2", "--accelerator",
                           "cpu"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**env, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("EPOCH_END 3") == 2  # three validation batches, each epoch
    assert "DONE 4 True" in done.stdout


def test_trainer_flags() -> None:
    source = textwrap.dedent("""\
        import pytorch_lightning as pl
        trainer = pl.Trainer(
            gpus=2,
            precision=16,  # half
            replace_sampler_ddp=False,
            accelerator="ddp",
            max_steps=None,
            resume_from_checkpoint="last.ckpt",
        )
        cpu = pl.Trainer(gpus=0, checkpoint_callback=False, num_processes=2)
        """)
    result = migrate_source(source)
    assert result.new == textwrap.dedent("""\
        import fulmen as pl
        trainer = pl.Trainer(
            accelerator="gpu",
            devices=2,
            precision="16-mixed",  # half
            use_distributed_sampler=False,
            strategy="ddp",
            max_steps=-1,
            resume_from_checkpoint="last.ckpt",
        )
        cpu = pl.Trainer(enable_checkpointing=False, accelerator="cpu", devices=2)
        """)
    assert result.notes == [(8, "Trainer(resume_from_checkpoint=...) was removed in Lightning "
                                "2.0: pass the path to trainer.fit(ckpt_path=...)")]


def test_names_without_counterpart_are_listed() -> None:
    source = textwrap.dedent("""\
        import lightning as L
        from lightning.pytorch.loops import FitLoop
        from lightning.pytorch.callbacks import Nope, EarlyStopping
        from lightning.pytorch.strategies import DDPStrategy
        from lightning.fabric import Fabric

        class M(L.LightningModule):
            def training_step_end(self, out):
                return out

        s = L.pytorch.strategies.FSDPStrategy()
        L.Trainer(callbacks=[L.pytorch.callbacks.Foo()])
        """)
    result = migrate_source(source)
    assert "from fulmen.callbacks import EarlyStopping\n" \
           "from lightning.pytorch.callbacks import Nope\n" in result.new
    assert "from fulmen_strategies import DDPStrategy" in result.new
    assert "from fulmen import Fabric" in result.new
    assert "class M(L.Module):" in result.new and "import fulmen as L" in result.new
    assert "s = fulmen_strategies.FSDPStrategy()" in result.new
    assert "import fulmen_strategies\n" in result.new
    assert [line for line, _ in result.notes] == [2, 3, 8, 12]
    assert "lightning.pytorch.loops.FitLoop has no fulmen counterpart" in result.notes[0][1]
    assert "lightning.pytorch.callbacks.Foo has no fulmen counterpart" in result.notes[3][1]


def test_command_check_diff_write(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pkg").mkdir()
    old = tmp_path / "pkg" / "train.py"
    old.write_text("from lightning.pytorch import Trainer\nfrom lightning.pytorch.loops import X\n")
    clean = tmp_path / "pkg" / "clean.py"
    clean.write_text("import torch\n")
    assert main(["--check", str(tmp_path / "pkg")]) == 1
    out = capsys.readouterr()
    assert f"would rewrite {old}" in out.out
    assert f"{old}:2: not migrated: lightning.pytorch.loops.X has no fulmen counterpart" in out.err
    assert main(["--diff", str(old)]) == 0
    assert "+from fulmen import Trainer" in capsys.readouterr().out
    assert old.read_text().startswith("from lightning")  # --diff and --check write nothing
    assert main([str(old)]) == 0 and old.read_text().startswith("from fulmen import Trainer")
    assert main(["--check", str(old), str(clean)]) == 0  # nothing more to change
    assert main(["missing.py"]) == 2
    assert "no such file or directory: missing.py" in capsys.readouterr().err


def test_lightning_1x_homes_of_moved_names() -> None:
    result = migrate_source(textwrap.dedent("""\
        from pytorch_lightning.utilities.cli import LightningCLI
        from pytorch_lightning.lite import LightningLite
        from pytorch_lightning.loggers.base import LightningLoggerBase
        from pytorch_lightning.core.lightning import LightningModule
        """))
    assert result.new == textwrap.dedent("""\
        from fulmen.cli import FulmenCLI as LightningCLI
        from fulmen import Lite as LightningLite
        from fulmen.loggers import Logger as LightningLoggerBase
        from fulmen import Module as LightningModule
        """)
    assert result.notes == []


def test_names_served_from_the_public_api_table_are_rewritten() -> None:
    result = migrate_source(textwrap.dedent("""\
        from lightning.pytorch.utilities.parsing import lightning_hasattr
        from lightning.pytorch.callbacks import ModelPruning
        """))
    assert result.new == textwrap.dedent("""\
        from fulmen.utilities.parsing import lightning_hasattr
        from fulmen.callbacks.pruning import ModelPruning
        """)
    assert result.notes == []


# ---------------------------------------------------------------------------- Hydra targets

HYDRA_CONFIG = """\
# a Hydra config: the Trainer and its parts are built by instantiate()
trainer:
  _target_: lightning.pytorch.Trainer   # Lightning's Trainer
  max_epochs: 2
  accelerator: cpu
  enable_progress_bar: false
  logger:
    _target_: 'pytorch_lightning.loggers.CSVLogger'
    save_dir: logs
  callbacks:
    - _target_: lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint
      monitor: "val_loss"
      dirpath: checkpoints
    - {_target_: "pytorch_lightning.callbacks.EarlyStopping", monitor: val_loss, patience: 5}
model:
  _target_: model.Model
  lr: 0.1
---
other_document:
  class_path: lightning_fabric.Fabric
"""

#: Hydra's instantiate, as far as these configs use it: `_target_` located the way
#: hydra.utils._locate does (import the longest module prefix, then attributes), arguments
#: built first (recursively). hydra is not installed here.
INSTANTIATE = '''\
import importlib


def locate(path):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(path)


def instantiate(config):
    if isinstance(config, list):
        return [instantiate(c) for c in config]
    if not isinstance(config, dict):
        return config
    kwargs = {k: instantiate(v) for k, v in config.items() if k != "_target_"}
    return locate(config["_target_"])(**kwargs) if "_target_" in config else kwargs
'''

HYDRA_SCRIPT = '''\
import sys

import torch
import yaml
from torch.utils.data import DataLoader

import lightning.pytorch as pl
from instantiate import instantiate


class Model(pl.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.layer(batch).pow(2).mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


if __name__ == "__main__":
    config = next(yaml.safe_load_all(open("config.yaml")))
    config["trainer"]["callbacks"].append(
        {"_target_": "pytorch_lightning.callbacks.LearningRateMonitor"})
    inline = yaml.safe_load("""
        profiler:
          _target_: lightning.pytorch.profilers.SimpleProfiler
        """)
    trainer = instantiate({**config["trainer"], **inline})
    model = instantiate(config["model"])
    data = torch.randn(16, 4)
    trainer.fit(model, DataLoader(data, batch_size=4), DataLoader(data, batch_size=8))
    for part in (trainer, trainer.logger, *trainer.callbacks, trainer.profiler):
        print("BUILT", type(part).__module__, type(part).__name__)
    print("DONE", trainer.global_step)
'''


def test_yaml_targets_are_rewritten_in_place() -> None:
    """Only the values change: comments, quoting, flow style, other documents stay."""
    from fulmen.dropin.migrate import migrate_yaml

    result = migrate_yaml(HYDRA_CONFIG)
    assert result.new == HYDRA_CONFIG.replace(
        "lightning.pytorch.Trainer", "fulmen.Trainer").replace(
        "pytorch_lightning.loggers.CSVLogger", "fulmen.loggers.CSVLogger").replace(
        "lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint",
        "fulmen.callbacks.ModelCheckpoint").replace(
        "pytorch_lightning.callbacks.EarlyStopping", "fulmen.callbacks.EarlyStopping").replace(
        "lightning_fabric.Fabric", "fulmen.Fabric")
    assert "model.Model" in result.new and result.notes == []


def test_yaml_target_without_counterpart_is_listed() -> None:
    from fulmen.dropin.migrate import migrate_yaml

    text = ("callbacks:\n"
            "  - _target_: lightning.pytorch.callbacks.NotALightningName\n"
            "    amount: 0.5\n"
            "  - class_path: pytorch_lightning.callbacks.EarlyStopping\n"
            "name: lightning.pytorch.Trainer  # not a target key: left alone\n")
    result = migrate_yaml(text)
    assert result.new == text.replace("pytorch_lightning.callbacks.EarlyStopping",
                                      "fulmen.callbacks.EarlyStopping")
    assert result.notes == [(2, "lightning.pytorch.callbacks.NotALightningName has no fulmen "
                                "counterpart; left as it was")]


def test_target_paths_follow_the_import_rewriting() -> None:
    """A dotted path becomes what `fulmen migrate` writes for the same import."""
    from fulmen.dropin.migrate import target_path

    for dotted, imported in [
            ("lightning.pytorch.Trainer", "from lightning.pytorch import Trainer"),
            ("lightning.pytorch.callbacks.ModelCheckpoint",
             "from lightning.pytorch.callbacks import ModelCheckpoint"),
            ("lightning.pytorch.loggers.TensorBoardLogger",
             "from lightning.pytorch.loggers import TensorBoardLogger"),
            ("lightning.fabric.Fabric", "from lightning.fabric import Fabric"),
            ("lightning.pytorch.strategies.DDPStrategy",
             "from lightning.pytorch.strategies import DDPStrategy")]:
        name = dotted.rpartition(".")[2]
        migrated = migrate_source(f"{imported}\n").new.split()
        assert target_path(dotted) == f"{migrated[1]}.{name}", (dotted, migrated)
    assert target_path("pytorch_lightning.LightningModule.load_from_checkpoint") == \
        "fulmen.Module.load_from_checkpoint"
    assert target_path("lightning.pytorch.callbacks") is None  # a module, not an object
    assert target_path("lightning.pytorch.loops.FitLoop") is None
    assert target_path("torch.optim.SGD") is None


def test_python_strings_with_targets() -> None:
    source = textwrap.dedent('''\
        from omegaconf import OmegaConf
        from hydra.utils import get_class, instantiate

        trainer = instantiate({"_target_": "pytorch_lightning.Trainer", "max_epochs": 1})
        early = dict(_target_='lightning.pytorch.callbacks.EarlyStopping', monitor="val_loss")
        cls = get_class("lightning.pytorch.loggers.CSVLogger")
        pruning = {"_target_": "lightning.pytorch.callbacks.NotALightningName"}
        config = OmegaConf.create("""
        model:
          _target_: mypackage.Model
        logger:
          _target_: lightning.pytorch.loggers.TensorBoardLogger
        cb:
          class_path: lightning.pytorch.callbacks.NotALightningName
        """)
        print("pytorch_lightning.trainer", r"lightning.Trainer")
        ''')
    result = migrate_source(source)
    assert result.new == source.replace("pytorch_lightning.Trainer", "fulmen.Trainer").replace(
        "lightning.pytorch.callbacks.EarlyStopping", "fulmen.callbacks.EarlyStopping").replace(
        "lightning.pytorch.loggers.CSVLogger", "fulmen.loggers.CSVLogger").replace(
        "lightning.pytorch.loggers.TensorBoardLogger", "fulmen.loggers.TensorBoardLogger").replace(
        'r"lightning.Trainer"', 'r"fulmen.Trainer"')
    missing = ("lightning.pytorch.callbacks.NotALightningName has no fulmen counterpart; "
               "left as it was")
    assert result.notes == [(7, missing), (14, missing)]


def test_migrated_hydra_project_runs_on_fulmen(tmp_path: Path) -> None:
    """`fulmen migrate DIR` rewrites the script, its YAML config and the targets in its strings;
    the project then builds fulmen's Trainer, logger, callbacks and profiler from the config under
    plain python (the real Lightning is installed beside: an unmigrated target would build
    Lightning's, which cannot train a fulmen Module)."""
    (tmp_path / "config.yaml").write_text(HYDRA_CONFIG)
    (tmp_path / "instantiate.py").write_text(INSTANTIATE)
    (tmp_path / "model.py").write_text(HYDRA_SCRIPT.split("\n\nif __name__")[0] + "\n")
    (tmp_path / "train.py").write_text("from model import *  # noqa\n" + HYDRA_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "fulmen", "migrate", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"rewrote {tmp_path / 'config.yaml'}" in done.stdout
    assert "_target_: fulmen.Trainer   # Lightning's Trainer" in \
        (tmp_path / "config.yaml").read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, "train.py"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env={**env, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    built = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("BUILT")]
    assert {"Trainer", "CSVLogger", "ModelCheckpoint", "EarlyStopping", "LearningRateMonitor",
            "SimpleProfiler"} <= {name for _, name in built}, built
    assert all(module.startswith("fulmen.") for module, _ in built), built
    assert "DONE 8" in done.stdout
    assert main(["--check", str(tmp_path)]) == 0  # nothing left to rewrite


def test_command_yaml_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory's .yaml/.yml files are migrated; a YAML file without target keys is not
    parsed; one that does not parse is reported (exit 2) and the others still migrate."""
    config = tmp_path / "conf" / "trainer.yml"
    config.parent.mkdir()
    config.write_text("_target_: pytorch_lightning.Trainer\n")
    (tmp_path / "conf" / "chart.yaml").write_text("image: {{ .Values.image }}\n")
    broken = tmp_path / "conf" / "broken.yaml"
    broken.write_text("_target_: [lightning.pytorch.Trainer\n")
    assert main(["--check", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert f"would rewrite {config}" in captured.out
    assert f"{broken}: cannot parse YAML" in captured.err and "chart.yaml" not in captured.err
    broken.unlink()
    assert main([str(config)]) == 0
    assert config.read_text() == "_target_: fulmen.Trainer\n"
