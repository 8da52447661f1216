"""Checkpoints at fsspec URLs (``memory://`` here): save, resume, load, remove; a temporary
object is committed last; an unknown scheme names what is known; crafted objects are refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import fsspec
import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError
from fulmen.api.checkpoint_io import TorchCheckpointIO


def test_trainer_saves_to_a_url_and_resumes_and_loads_from_it(tmp_path: Path) -> None:
    url = "memory://fulmen-test/run/a.ckpt"
    trainer = fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=2))
    trainer.fit(TinyModule(hidden=6), loader(32))
    trainer.save_checkpoint(url)
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    fs = fsspec.filesystem("memory")
    assert fs.ls("/fulmen-test/run", detail=False) == ["/fulmen-test/run/a.ckpt"]  # no temps
    resumed = {}
    for source in (url, tmp_path / "a.ckpt"):  # resuming from the URL == from the local file
        torch.manual_seed(0)
        runner = fulmen.Trainer(**lean(max_epochs=3, limit_train_batches=2))
        runner.fit(TinyModule(hidden=6), loader(32), ckpt_path=source)
        resumed[str(source)] = (runner.global_step, runner.lightning_module.state_dict())
    (step_url, weights_url), (step_file, weights_file) = resumed.values()
    assert step_url == step_file > 2
    assert all(torch.equal(weights_url[k], weights_file[k]) for k in weights_file)
    model = TinyModule.load_from_checkpoint(url)
    assert model.hparams.hidden == 6
    TorchCheckpointIO().remove_checkpoint(url)
    assert not fs.exists("/fulmen-test/run/a.ckpt")


class Unpicklable:
    def __reduce__(self) -> Any:
        raise RuntimeError("cannot save this")


def test_a_failed_url_save_leaves_the_old_object_and_no_temporary() -> None:
    io = TorchCheckpointIO()
    url = "memory://fulmen-test/failed/x.ckpt"
    io.save_checkpoint({"v": torch.ones(2)}, url)
    with pytest.raises(RuntimeError, match="cannot save this"):
        io.save_checkpoint({"v": Unpicklable()}, url)
    assert fsspec.filesystem("memory").ls("/fulmen-test/failed", detail=False) == \
        ["/fulmen-test/failed/x.ckpt"]
    assert torch.equal(io.load_checkpoint(url)["v"], torch.ones(2))


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> Any:
        return (os.makedirs, (self.marker,))


def test_url_errors_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"'nosuch://b/a.ckpt' has a scheme fsspec "
                                                 r"does not know \('nosuch'\); known schemes:"):
        TorchCheckpointIO().save_checkpoint({}, "nosuch://b/a.ckpt")
    with pytest.raises(ConfigurationError, match=r"'memory://fulmen-test/none.ckpt' does not "
                                                 r"exist"):
        TorchCheckpointIO().load_checkpoint("memory://fulmen-test/none.ckpt")
    marker = tmp_path / "PWNED"
    with fsspec.open("memory://fulmen-test/evil.ckpt", "wb") as handle:
        torch.save({"state_dict": Payload(marker)}, handle)
    with pytest.raises(ConfigurationError, match=r"'memory://fulmen-test/evil.ckpt' is not a "
                                                 r"trusted checkpoint.*os\.makedirs"):
        TinyModule.load_from_checkpoint("memory://fulmen-test/evil.ckpt")
    assert not marker.exists()
    with fsspec.open("memory://fulmen-test/cut.ckpt", "wb") as handle:
        handle.write(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(ConfigurationError, match="is truncated or corrupt"):
        TorchCheckpointIO().load_checkpoint("memory://fulmen-test/cut.ckpt")


def test_file_urls_are_local_paths(tmp_path: Path) -> None:
    TorchCheckpointIO().save_checkpoint({"v": torch.zeros(1)}, f"file://{tmp_path}/f.ckpt")
    assert (tmp_path / "f.ckpt").is_file()
    assert torch.equal(TorchCheckpointIO().load_checkpoint(f"file://{tmp_path}/f.ckpt")["v"],
                       torch.zeros(1))


def test_a_scheme_whose_package_is_missing_names_the_package(tmp_path: Path) -> None:
    from fulmen.callbacks import ModelCheckpoint

    for scheme, package in (("gs", "gcsfs"), ("az", "adlfs")):
        pytest.importorskip("fsspec")
        if __import__("importlib").util.find_spec(package) is not None:
            continue  # installed here: nothing to name
        with pytest.raises(ConfigurationError, match=rf"the {scheme}:// scheme needs {package}, "
                                                     rf"which is not installed: pip install "
                                                     rf"{package}"):
            TorchCheckpointIO().save_checkpoint({}, f"{scheme}://bucket/a.ckpt")
        with pytest.raises(ConfigurationError, match=rf"ModelCheckpoint\(dirpath=...\) "
                                                     rf"'{scheme}://bucket/run': .*needs "
                                                     rf"{package}"):
            ModelCheckpoint(dirpath=f"{scheme}://bucket/run")
        with pytest.raises(ConfigurationError, match=rf"default_root_dir=...\) .*{package}"):
            fulmen.Trainer(default_root_dir=f"{scheme}://bucket/root")


def test_model_checkpoint_rotates_and_links_on_a_memory_store() -> None:
    from fulmen.callbacks import ModelCheckpoint

    checkpoint = ModelCheckpoint(dirpath="memory://fulmen-test/topk", every_n_train_steps=1,
                                 save_top_k=2, monitor="step", mode="max", save_last="link")
    trainer = fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=4,
                                    enable_checkpointing=True), callbacks=[checkpoint])
    trainer.fit(TinyModule(), loader(32))
    fs = fsspec.filesystem("memory")
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls("/fulmen-test/topk", detail=False)) == \
        ["epoch=0-step=3.ckpt", "epoch=0-step=4.ckpt", "last.ckpt"]
    assert TorchCheckpointIO().load_checkpoint(checkpoint.last_model_path)["global_step"] == 4
