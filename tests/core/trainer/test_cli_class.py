"""FulmenCLI as LightningCLI: subclass mode from flags, argument linking in a subclass, one
top-level parser whose --help shows the Trainer's docstrings and the registered names."""

from __future__ import annotations

import os

import pytest
import torch
from tiny_models import TinyData, TinyModule

from fulmen.cli import FulmenCLI, LightningCLI, main

QUIET = ["--trainer.logger=false", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]


class Classes(TinyData):
    """TinyData that knows how many classes it has (known once it is built)."""

    def __init__(self, num_classes: int = 2, n: int = 16) -> None:
        super().__init__(n=n)
        self.num_classes = num_classes


class Wide(TinyModule):
    def __init__(self, classes: int = 2) -> None:
        super().__init__()
        self.net[-1] = torch.nn.Linear(16, classes)


class LinkedCLI(FulmenCLI):
    def add_arguments_to_parser(self, parser):
        parser.link_arguments("data.num_classes", "model.classes", apply_on="instantiate")


def test_linked_arguments_reach_the_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = LinkedCLI(Wide, Classes, run=False, args=["--data.num_classes=5", *QUIET])
    assert cli.model.net[-1].out_features == 5 and cli.datamodule.num_classes == 5
    assert LightningCLI is FulmenCLI  # the name Lightning users import


def test_subclass_mode_from_flags_fits_seeds_and_saves_the_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = FulmenCLI(args=["fit", "--model=tiny_models.TinyModule", "--model.lr=0.05",
                          "--data=tiny_models.TinyData", "--data.n=16", "--seed_everything=5",
                          "--trainer.max_epochs=1", f"--trainer.default_root_dir={tmp_path}",
                          *QUIET])
    assert cli.exit_code == 0 and cli.subcommand == "fit"
    assert isinstance(cli.model, TinyModule) and cli.model.hparams.lr == 0.05
    assert cli.trainer.global_step == 2 and os.environ["FULMEN_GLOBAL_SEED"] == "5"
    saved = (tmp_path / "config.yaml").read_text()
    assert "class_path: tiny_models.TinyModule" in saved and "lr: 0.05" in saved


def test_ckpt_path_resumes_in_validate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    common = ["--model=tiny_models.TinyModule", "--data=tiny_models.TinyData", "--data.n=16",
              f"--trainer.default_root_dir={tmp_path}", "--save_config=false", *QUIET]
    assert FulmenCLI(args=["fit", "--trainer.max_epochs=1", *common]).exit_code == 0
    ckpt = next(tmp_path.glob("checkpoints/*.ckpt"))
    cli = FulmenCLI(args=["validate", f"--ckpt_path={ckpt}", *common])
    assert cli.exit_code == 0 and cli.trainer.ckpt_path == str(ckpt)


def test_help_shows_docstrings_and_registered_names(capsys):
    with pytest.raises(SystemExit) as info:
        main(["fit", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "stop after this many epochs" in text  # from the Trainer's docstring
    assert "Registered now: cpu, cuda, mps" in text and "ddp_spawn" in text
    assert "--model CONFIG | CLASS_PATH_OR_NAME | .INIT_ARG_NAME VALUE" in text


def test_print_config_with_subclass_flags(capsys):
    assert main(["fit", "--model=tiny_models.TinyModule", "--model.lr=0.3",
                 "--print_config"]) == 0
    out = capsys.readouterr().out
    assert "class_path: tiny_models.TinyModule" in out and "lr: 0.3" in out


def test_a_misspelt_subcommand_gets_a_did_you_mean(capsys):
    assert main(["fitt", "--config", "x.yaml"]) == 2
    assert "invalid choice: 'fitt'" in capsys.readouterr().err
