"""``fulmen checkpoint inspect|verify|diff`` run as the real command on real files: single
files, DCP directories, damaged and crafted ones (nothing in them is ever executed)."""

from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen

pytestmark = pytest.mark.timeout(120)


def cli(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fulmen", "checkpoint", *map(str, args)],
                          capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "a.ckpt"
    trainer = fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=3))
    trainer.fit(TinyModule(hidden=12, lr=0.3), loader(32))
    trainer.save_checkpoint(path)
    return path


def test_inspect_prints_tensors_progress_origin_and_hyperparameters(saved: Path) -> None:
    done = cli("inspect", saved)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"{saved} (file checkpoint)" in out
    assert "strategy=single_device" in out and "world_size=1" in out and \
        "precision=32-true" in out and f"torch={torch.__version__}" in out
    assert "progress: global_step = 3" in out
    assert '"hidden": 12' in out and '"lr": 0.3' in out
    assert next(line.split() for line in out.splitlines() if "net.0.weight" in line) == \
        ["state_dict.net.0.weight", "[12,", "8]", "float32", "384", "B"]
    report = json.loads(cli("inspect", saved, "--json").stdout)
    assert report["tensors"]["state_dict.net.0.weight"] == \
        {"shape": [12, 8], "dtype": "float32", "bytes": 384}
    assert report["progress"]["global_step"] == 3 and report["hyperparameters"]["hidden"] == 12
    assert report["origin"]["strategy"] == "single_device"


def _flip_in_record(path: Path, suffix: str) -> str:
    with zipfile.ZipFile(path) as archive:
        record = next(i for i in archive.infolist() if i.filename.endswith(suffix))
    data = bytearray(path.read_bytes())
    name, extra = struct.unpack("<HH", data[record.header_offset + 26:record.header_offset + 30])
    data[record.header_offset + 30 + name + extra + record.file_size // 2] ^= 0x10
    path.write_bytes(bytes(data))
    return record.filename


def test_verify_finds_a_flipped_byte_in_tensor_data_and_a_truncation(saved: Path,
                                                                     tmp_path: Path) -> None:
    assert cli("verify", saved).stdout.strip().startswith(f"OK {saved} (CRC-32C ")
    flipped = tmp_path / "flipped.ckpt"
    flipped.write_bytes(saved.read_bytes())
    record = _flip_in_record(flipped, "/data/0")
    done = cli("verify", flipped)
    assert done.returncode == 1
    assert f"FAIL '{flipped}' is corrupt: record '{record}' fails its CRC check" in done.stdout
    assert f"FAIL checkpoint file '{flipped}' is corrupt: its bytes do not match the CRC-32C" \
        in done.stdout
    cut = tmp_path / "cut.ckpt"
    cut.write_bytes(saved.read_bytes()[:1000])
    done = cli("verify", cut)
    assert done.returncode == 1 and f"FAIL '{cut}' is truncated or corrupt" in done.stdout


def test_diff_lists_added_removed_and_changed_with_max_abs_difference(saved: Path,
                                                                      tmp_path: Path) -> None:
    same = cli("diff", saved, saved)
    assert same.returncode == 0 and "0 added, 0 removed, 0 changed" in same.stdout
    state = torch.load(saved, weights_only=True)
    state["state_dict"]["net.0.bias"] = state["state_dict"]["net.0.bias"] + 0.25
    state["state_dict"]["net.3.weight"] = torch.zeros(3, 12)
    state["state_dict"]["extra"] = torch.ones(2)
    del state["state_dict"]["net.3.bias"]
    torch.save(state, tmp_path / "b.ckpt")
    done = cli("diff", saved, tmp_path / "b.ckpt")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert "+ state_dict.extra" in lines and "- state_dict.net.3.bias" in lines
    assert "~ state_dict.net.0.bias: max abs diff 0.25" in lines
    assert "~ state_dict.net.3.weight: [2, 12] torch.float32 -> [3, 12] torch.float32" in lines
    data = json.loads(cli("diff", saved, tmp_path / "b.ckpt", "--json").stdout)
    assert data["changed"]["state_dict.net.0.bias"]["max_abs_diff"] == pytest.approx(0.25)


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> Any:
        return (os.makedirs, (self.marker,))


def test_crafted_files_are_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    torch.save({"state_dict": {"w": Payload(marker)}}, tmp_path / "evil.ckpt")
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(Payload(marker), protocol=2))
    for name in ("evil.ckpt", "evil.pkl"):
        for action in (("inspect",), ("diff", tmp_path / name)):
            done = cli(action[0], tmp_path / name, *action[1:])
            assert done.returncode == 2, done.stdout
            assert f"'{tmp_path / name}' is not a trusted checkpoint" in done.stderr
            assert "unsafe global 'os.makedirs'" in done.stderr
    assert not marker.exists()


def test_dcp_directories_are_inspected_through_an_allow_listed_unpickler(
        tmp_path: Path) -> None:
    import torch.distributed.checkpoint as dcp

    state = {"model": {"w": torch.ones(3, 4), "b": torch.zeros(4, dtype=torch.bfloat16)}}
    dcp.save(state, checkpoint_id=str(tmp_path / "dcp"), no_dist=True)
    report = json.loads(cli("inspect", tmp_path / "dcp", "--json").stdout)
    assert report["kind"] == "dcp"
    assert report["tensors"]["model.w"] == {"shape": [3, 4], "dtype": "float32", "bytes": 48}
    assert report["tensors"]["model.b"] == {"shape": [4], "dtype": "bfloat16", "bytes": 8}
    marker = tmp_path / "PWNED"
    (tmp_path / "dcp" / ".metadata").write_bytes(pickle.dumps(Payload(marker), protocol=2))
    done = cli("inspect", tmp_path / "dcp")
    assert done.returncode == 2 and "unsafe global 'os.makedirs'" in done.stderr
    assert f"'{tmp_path / 'dcp' / '.metadata'}' is not a trusted checkpoint" in done.stderr
    assert not marker.exists()
