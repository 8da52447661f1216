"""Single-file checkpoints: crafted pickles are refused by every entry point (the payload never
runs), damaged files say they are truncated or corrupt and name the path."""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError
from fulmen.checkpoint import safety


class Payload:
    def __init__(self, marker: Path, how: str = "makedirs") -> None:
        self.marker, self.how = str(marker), how

    def __reduce__(self) -> Any:
        if self.how == "eval":
            return (eval, (f"__import__('os').makedirs({self.marker!r})",))
        return (os.makedirs, (self.marker,))


def crafted(tmp_path: Path, marker: Path) -> dict[str, Path]:
    """One file per way of hiding a payload in something that looks like a checkpoint."""
    good = TinyModule().state_dict()
    files: dict[str, Any] = {
        "zip-top": Payload(marker),
        "zip-state": {"state_dict": {**good, "x": Payload(marker)}},
        "zip-hparams": {"state_dict": good, "hyper_parameters": {"a": Payload(marker, "eval")}},
    }
    out = {}
    for name, content in files.items():
        out[name] = tmp_path / f"{name}.ckpt"
        torch.save(content, out[name])
    for protocol in (0, 2, 5):  # bare pickles: torch's legacy format
        out[f"pickle-{protocol}"] = tmp_path / f"pickle-{protocol}.ckpt"
        out[f"pickle-{protocol}"].write_bytes(
            pickle.dumps({"state_dict": Payload(marker)}, protocol=protocol))
    buffer = io.BytesIO()  # a zip whose data.pkl was swapped for a payload
    torch.save({"state_dict": good}, buffer)
    out["zip-swapped"] = tmp_path / "zip-swapped.ckpt"
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(out["zip-swapped"], "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("data.pkl"):
                data = pickle.dumps(Payload(marker), protocol=2)
            dst.writestr(item, data)
    return out


def test_every_entry_point_refuses_every_crafted_file(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    for name, path in crafted(tmp_path, marker).items():
        attempts = {
            "load_from_checkpoint": lambda p=path: TinyModule.load_from_checkpoint(p),
            "trainer.validate": lambda p=path: fulmen.Trainer(**lean()).validate(
                TinyModule(), loader(16), ckpt_path=p, verbose=False),
            "lite.load": lambda p=path: fulmen.Lite(accelerator="cpu").load(p),
            "load_file": lambda p=path: safety.load_file(p),
        }
        for entry, attempt in attempts.items():
            with pytest.raises(ConfigurationError) as caught:
                attempt()
            message = str(caught.value)
            assert str(path) in message, (name, entry, message)
            assert "not a trusted checkpoint" in message or \
                "not a torch checkpoint" in message, (name, entry, message)
    assert not marker.exists()


def test_the_refusal_names_the_global_and_how_to_opt_in(tmp_path: Path) -> None:
    path = crafted(tmp_path, tmp_path / "PWNED")["zip-state"]
    with pytest.raises(safety.UnsafeCheckpointError,
                       match=r"unsafe global 'os.makedirs'.* If you trust the file, load it "
                             r"with weights_only=False"):
        TinyModule.load_from_checkpoint(path)


def test_weights_only_everywhere_holds_libraries_to_safe_loading(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    path = crafted(tmp_path, marker)["zip-top"]
    os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        with safety.weights_only_everywhere(), \
                pytest.raises(pickle.UnpicklingError, match=r"os\.makedirs"):
            torch.load(path, weights_only=False)  # as a library would call it
        assert os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1"
        assert "TORCH_FORCE_WEIGHTS_ONLY_LOAD" not in os.environ
    finally:
        del os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"]
    assert not marker.exists()


def test_allowed_classes_load_inside_and_only_inside_the_block(tmp_path: Path) -> None:
    torch.save({"p": Plain(3)}, tmp_path / "plain.pt")
    with pytest.raises(safety.UnsafeCheckpointError, match="Plain"):
        safety.load_file(tmp_path / "plain.pt")
    assert safety.load_file(tmp_path / "plain.pt", allow=[Plain])["p"].value == 3
    with safety.weights_only_everywhere([Plain]):
        with safety.weights_only_everywhere([Plain]):  # nested: the outer keeps its list
            pass
        assert torch.load(tmp_path / "plain.pt", weights_only=False)["p"].value == 3
    assert Plain not in torch.serialization.get_safe_globals()


class Plain:
    def __init__(self, value: int) -> None:
        self.value = value


def _saved(tmp_path: Path) -> Path:
    trainer = fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=2))
    trainer.fit(TinyModule(), loader(16))
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    return tmp_path / "a.ckpt"


def test_a_truncated_checkpoint_says_so_and_names_the_path(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    data = path.read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 3):
        path.write_bytes(data[:cut])
        with pytest.raises(safety.CorruptCheckpointError,
                           match=rf"checkpoint file '{path}' is truncated or corrupt"):
            TinyModule.load_from_checkpoint(path)
    path.write_bytes(b"")
    with pytest.raises(safety.CorruptCheckpointError, match=r"is empty \(0 bytes\)"):
        fulmen.Trainer(**lean()).validate(TinyModule(), loader(16), ckpt_path=path)


def test_a_flipped_byte_names_the_damaged_record(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    with zipfile.ZipFile(path) as archive:
        record = next(i for i in archive.infolist() if i.filename.endswith("data.pkl"))
    data = bytearray(path.read_bytes())
    name, extra = struct.unpack("<HH", data[record.header_offset + 26:record.header_offset + 30])
    data[record.header_offset + 30 + name + extra + record.file_size // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(safety.CorruptCheckpointError,
                       match=rf"'{path}' is corrupt: record '.*data.pkl' fails its CRC check"):
        fulmen.Lite(accelerator="cpu").load(path)


def test_dcp_directories_load_without_running_their_metadata_or_items(tmp_path: Path) -> None:
    import torch.distributed.checkpoint as dcp

    from fulmen.checkpoint.reading import safe_dcp_load

    marker = tmp_path / "PWNED"
    good = {"w": torch.arange(6.0).reshape(2, 3), "extra": {"note": "plain data"}}
    dcp.save(good, checkpoint_id=str(tmp_path / "good"), no_dist=True)
    into: dict[str, Any] = {"w": torch.zeros(2, 3), "extra": {"note": ""}}
    safe_dcp_load(into, tmp_path / "good")
    assert torch.equal(into["w"], good["w"]) and into["extra"] == {"note": "plain data"}

    dcp.save({"w": torch.ones(2, 3), "extra": Payload(marker)},  # a non-tensor item
             checkpoint_id=str(tmp_path / "item"), no_dist=True)
    with pytest.raises(safety.UnsafeCheckpointError, match=r"unsafe global 'os\.makedirs'"):
        safe_dcp_load({"w": torch.zeros(2, 3), "extra": None}, tmp_path / "item")
    (tmp_path / "good" / ".metadata").write_bytes(pickle.dumps(Payload(marker), protocol=2))
    with pytest.raises(safety.UnsafeCheckpointError,
                       match=r"'.*good/\.metadata' is not a trusted checkpoint"):
        safe_dcp_load({"w": torch.zeros(2, 3)}, tmp_path / "good")
    assert not marker.exists()
