"""Loading a checkpoint into a model of another shape names the path, the keys and both
shapes, through ``Trainer(ckpt_path=)``, ``Module.load_from_checkpoint`` and ``Lite.load``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    trainer = fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=1))
    trainer.fit(TinyModule(hidden=16), loader(16))
    trainer.save_checkpoint(tmp_path / "h16.ckpt")
    return tmp_path / "h16.ckpt"


def expected(path: Path) -> str:
    return (rf"checkpoint '{re.escape(str(path))}' does not fit .*shape mismatches: "
            r"net\.0\.bias: checkpoint \[16\], model \[12\]; net\.0\.weight: checkpoint "
            r"\[16, 8\], model \[12, 8\]; net\.3\.weight: checkpoint \[2, 16\], model \[2, 12\]")


def test_trainer_ckpt_path_names_path_keys_and_shapes(saved: Path) -> None:
    with pytest.raises(ConfigurationError, match=expected(saved)):
        fulmen.Trainer(**lean()).validate(TinyModule(hidden=12), loader(16), ckpt_path=saved,
                                          verbose=False)


def test_load_from_checkpoint_names_path_keys_and_shapes(saved: Path) -> None:
    with pytest.raises(ConfigurationError, match=expected(saved)):
        TinyModule.load_from_checkpoint(saved, hidden=12)


def test_lite_load_names_path_keys_and_shapes(tmp_path: Path) -> None:
    path = tmp_path / "lite.ckpt"

    def body(lite: fulmen.Lite) -> None:
        lite.save(path, {"model": lite.setup(torch.nn.Linear(4, 3)), "step": 1})
        for target in (lite.setup(torch.nn.Linear(4, 5)), torch.nn.Linear(4, 5)):
            with pytest.raises(ConfigurationError,
                               match=rf"checkpoint '{re.escape(str(path))}' does not fit "
                                     r"state\['model'\] \(Linear\): .*shape mismatches: bias: "
                                     r"checkpoint \[3\], model \[5\]; weight: checkpoint "
                                     r"\[3, 4\], model \[5, 4\]"):
                lite.load(path, {"model": target})
        wide = torch.nn.Linear(4, 3)
        wide.register_buffer("extra", torch.zeros(1))
        with pytest.raises(ConfigurationError, match=r"missing keys \['extra'\], unexpected "
                                                     r"keys \[\]"):
            lite.load(path, {"model": wide})

    fulmen.Lite(accelerator="cpu").launch(body)
