"""``fulmen migrate``: Lightning 1.x/2.x scripts rewritten with libcst run on fulmen under plain
``python``; what cannot be migrated is listed as file:line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

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
