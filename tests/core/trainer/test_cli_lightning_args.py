"""LightningCLI's constructor arguments on FulmenCLI (ports the idioms of Lightning's
``tests_pytorch/test_cli.py``: ``save_config_kwargs``, ``save_config_callback`` (None and a
subclass overriding ``save_config``), ``parser_class``, ``trainer_defaults`` with callback
instances, ``auto_configure_optimizers`` with ``--optimizer``/``--lr_scheduler``).

Deliberate differences (also in docs/migrating.md): ``SaveConfigCallback(multifile=True)`` is
taken and writes one file; a plain ``torch.optim.lr_scheduler.ReduceLROnPlateau`` given to
``--lr_scheduler`` is a ``ConfigurationError`` naming the scheduler with ``monitor`` to use
(Lightning: ``AttributeError``).
"""

from __future__ import annotations

from pathlib import Path

import torch
from jsonargparse import ArgumentParser
from tiny_models import TinyData, TinyModule

import fulmen
from fulmen.cli import FulmenCLI, SaveConfigCallback

QUIET = ["--trainer.logger=false", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false", "--trainer.max_epochs=1"]


def _fit(tmp_path: Path, *args: str, **kwargs) -> FulmenCLI:
    return FulmenCLI(TinyModule, TinyData, args=["fit", f"--trainer.default_root_dir={tmp_path}",
                                                 *QUIET, *args], **kwargs)


def test_save_config_kwargs_overwrite(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = _fit(tmp_path, "--model.lr=0.1")
    assert first.exit_code == 0
    saved = next(tmp_path.rglob("config.yaml"))
    again = _fit(tmp_path, "--model.lr=0.2", save_config_kwargs={"overwrite": True})
    assert again.exit_code == 0 and "lr: 0.2" in saved.read_text()


def test_save_config_callback_none_and_subclass(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _fit(tmp_path / "a", save_config_callback=None).exit_code == 0
    assert not list((tmp_path / "a").rglob("config.yaml"))

    seen: list[str] = []

    class ToTracker(SaveConfigCallback):
        def save_config(self, trainer, module, stage) -> None:
            seen.append(self.parser.dump(self.config))

    cli = _fit(tmp_path / "b", save_config_callback=ToTracker,
               save_config_kwargs={"save_to_log_dir": False, "config_filename": "x.yaml"})
    assert cli.exit_code == 0 and len(seen) == 1 and "lr:" in seen[0]
    assert not list((tmp_path / "b").rglob("*.yaml"))


def test_parser_class_and_trainer_defaults_with_instances(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)

    class MyParser(ArgumentParser):
        made = 0

        def __init__(self, *args, **kwargs) -> None:
            MyParser.made += 1
            super().__init__(*args, **kwargs)

    class Mark(fulmen.Callback):
        pass

    mark = Mark()
    cli = _fit(tmp_path, parser_class=MyParser,
               trainer_defaults={"callbacks": mark, "max_epochs": 3, "limit_train_batches": 1})
    assert cli.exit_code == 0 and MyParser.made >= 1
    assert mark in cli.trainer.callbacks
    assert cli.trainer.max_epochs == 1  # the command line wins over trainer_defaults
    assert cli.trainer.limit_train_batches == 1


def test_auto_configure_optimizers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli = _fit(tmp_path, "--optimizer=torch.optim.Adam", "--optimizer.lr=0.01",
               "--lr_scheduler=torch.optim.lr_scheduler.StepLR", "--lr_scheduler.step_size=1")
    assert cli.exit_code == 0
    optimizer = cli.trainer.optimizers[0]
    assert isinstance(optimizer, torch.optim.Adam) and optimizer.defaults["lr"] == 0.01
    assert isinstance(cli.trainer.lr_scheduler_configs[0].scheduler,
                      torch.optim.lr_scheduler.StepLR)
    off = _fit(tmp_path / "off", auto_configure_optimizers=False)
    assert off.exit_code == 0 and not isinstance(off.trainer.optimizers[0], torch.optim.Adam)
