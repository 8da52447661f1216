"""The canonical checkpoint in one process: ``fulmen checkpoint convert`` between a file, a DCP
directory and safetensors (what it writes loads back equal); resuming, ``load_from_checkpoint``
and ``Lite.load`` from a DCP directory; and the bad inputs of issue 18 (a missing shard, two
checkpoints in one directory, a manifest whose world size the shards contradict, a checkpoint
from a newer fulmen) each refused with a clear error, nothing overwritten."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from processes import FIXTURES
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.checkpoint import canonical, convert, manifest
from fulmen.checkpoint.safety import CorruptCheckpointError

pytestmark = pytest.mark.timeout(180)


def cli(*args: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(  # tiny_models, for --model
        [str(FIXTURES), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "fulmen", "checkpoint", *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=env)


class AdamTiny(TinyModule):
    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.05)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("canonical") / "a.ckpt"
    torch.manual_seed(0)
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(AdamTiny(hidden=12), loader(32))
    trainer.save_checkpoint(path)
    return path


def equal_nested(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and set(map(str, a)) == set(map(str, b)) and all(
            equal_nested(v, b[k] if k in b else b[str(k)]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(equal_nested(x, y) for x, y in zip(a, b))
    return bool(a == b)


def test_optimizer_state_is_keyed_by_parameter_names(saved: Path) -> None:
    state = torch.load(saved, weights_only=True)
    optimizer = state["optimizer_states"][0]
    assert set(optimizer["state"]) == {"net.0.weight", "net.0.bias", "net.3.weight",
                                       "net.3.bias"}
    assert optimizer["param_groups"][0]["params"] == list(optimizer["state"])
    assert state[manifest.KEY]["format"] == manifest.FORMAT


def test_convert_round_trips_file_dcp_file(saved: Path, tmp_path: Path) -> None:
    done = cli("convert", saved, tmp_path / "d", "--to", "dcp")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "d" / ".metadata").is_file() and (tmp_path / "d" / "meta.pt").is_file()
    assert cli("verify", tmp_path / "d").returncode == 0
    done = cli("convert", tmp_path / "d", tmp_path / "back.ckpt", "--to", "file")
    assert done.returncode == 0, done.stderr
    assert cli("verify", tmp_path / "back.ckpt").returncode == 0  # CRCs patched in place
    original = torch.load(saved, weights_only=True)
    back = torch.load(tmp_path / "back.ckpt", weights_only=True)
    for key in ("state_dict", "optimizer_states", "epoch", "global_step", "hyper_parameters"):
        assert equal_nested(original[key], back[key]), key


def test_convert_to_safetensors_writes_the_weights(saved: Path, tmp_path: Path) -> None:
    target = tmp_path / "w.safetensors"
    assert cli("convert", saved, target, "--to", "safetensors").returncode == 0
    data = target.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    weights = torch.load(saved, weights_only=True)["state_dict"]
    assert set(header) - {"__metadata__"} == set(weights)
    for name, tensor in weights.items():
        start, end = header[name]["data_offsets"]
        raw = bytearray(data[8 + size + start:8 + size + end])
        got = torch.frombuffer(raw, dtype=tensor.dtype).reshape(tensor.shape)
        assert torch.equal(got, tensor), name
    assert json.loads(header["__metadata__"][manifest.KEY])["strategy"] == "single_device"


def test_convert_reads_a_plain_state_dict_and_never_overwrites(tmp_path: Path) -> None:
    plain = tmp_path / "plain.pt"
    torch.save(TinyModule().state_dict(), plain)
    assert cli("convert", plain, tmp_path / "d", "--to", "dcp").returncode == 0
    full = canonical.read_full(tmp_path / "d")
    assert set(full["state_dict"]) == set(TinyModule().state_dict())
    existing = tmp_path / "taken.ckpt"
    existing.write_bytes(b"keep me")
    done = cli("convert", plain, existing, "--to", "file")
    assert done.returncode == 2 and "exists already" in done.stderr
    assert existing.read_bytes() == b"keep me"


def test_resume_load_from_checkpoint_and_lite_load_read_a_dcp_directory(
        saved: Path, tmp_path: Path) -> None:
    directory = convert.convert(saved, tmp_path / "d", "dcp")
    results = []
    for path in (saved, directory):
        trainer = fulmen.Trainer(**lean(max_epochs=2))
        model = AdamTiny(hidden=12)
        trainer.fit(model, loader(32), ckpt_path=str(path))
        results.append({k: v.clone() for k, v in model.state_dict().items()})
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])
    loaded = AdamTiny.load_from_checkpoint(directory)
    assert loaded.hparams["hidden"] == 12
    assert torch.equal(loaded.net[0].weight,
                       torch.load(saved, weights_only=True)["state_dict"]["net.0.weight"])
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    state = lite.load(directory)
    assert torch.equal(state["state_dict"]["net.0.weight"], loaded.net[0].weight)


def test_verify_compares_keys_and_shapes_with_a_model_class(saved: Path) -> None:
    ok = cli("verify", saved, "--model", "tiny_models.TinyModule")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wrong = cli("verify", saved, "--model", "torch.nn.Identity")
    assert wrong.returncode == 1 and "unexpected key 'net.0.weight'" in wrong.stdout


@pytest.fixture
def directory(saved: Path, tmp_path: Path) -> Path:
    return convert.convert(saved, tmp_path / "d", "dcp")


def test_a_missing_shard_is_named(directory: Path) -> None:
    (directory / "__0_0.distcp").unlink()
    with pytest.raises(fulmen.ConfigurationError, match=r"incomplete.*__0_0\.distcp.*missing"):
        canonical.read_directory(directory)


def test_a_corrupted_shard_of_the_same_size_is_named_on_load(directory: Path) -> None:
    """Checksums are compared on load, not only sizes: a flipped byte in tensor data stops
    the resume with the file named, before anything is read into the model."""
    shard = directory / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    match = r"__0_0\.distcp.*does not match its crc32c.*corrupt"
    with pytest.raises(CorruptCheckpointError, match=match):
        canonical.read_directory(directory)
    trainer = fulmen.Trainer(**lean(max_epochs=2))
    with pytest.raises(fulmen.ConfigurationError, match=match):
        trainer.fit(AdamTiny(hidden=12), loader(32), ckpt_path=str(directory))
    with pytest.raises(CorruptCheckpointError, match=match):  # nor is it converted onwards
        convert.convert(directory, directory.parent / "copy.ckpt", "file")
    assert not (directory.parent / "copy.ckpt").exists()
    # processes reading together split the files: each compares only its share
    files = json.loads((directory / manifest.FILE).read_text())["files"]
    listed = sorted(files, key=lambda n: (-files[n]["bytes"], n))  # largest first
    mine = listed.index("__0_0.distcp")
    manifest.check_checksums(directory, files, (mine + 1, len(listed)))  # another process's share
    with pytest.raises(CorruptCheckpointError, match=match):
        manifest.check_checksums(directory, files, (mine, len(listed)))


def test_two_checkpoints_mixed_in_one_directory(directory: Path, saved: Path,
                                                 tmp_path: Path) -> None:
    other = convert.convert(saved, tmp_path / "other", "dcp")
    shutil.copy(other / "__0_0.distcp", directory / "__1_0.distcp")
    with pytest.raises(fulmen.ConfigurationError, match=r"mixes files of two checkpoints.*"
                                                        r"__1_0\.distcp"):
        canonical.read_directory(directory)


def test_a_manifest_claiming_more_ranks_than_shards(directory: Path) -> None:
    for rank in (1, 2):
        shutil.copy(directory / "__0_0.distcp", directory / f"__{rank}_0.distcp")
    facts = json.loads((directory / manifest.FILE).read_text())
    facts.pop("files")
    facts["world_size"] = 4
    manifest.write_directory_manifest(directory, facts)
    with pytest.raises(fulmen.ConfigurationError, match=r"world size 4, but shards of 3 rank"):
        canonical.read_directory(directory)


def test_a_checkpoint_from_a_newer_fulmen_names_the_version_to_install(
        saved: Path, directory: Path, tmp_path: Path) -> None:
    facts = json.loads((directory / manifest.FILE).read_text())
    facts.update(format=manifest.FORMAT + 1, fulmen="9.4.0")
    (directory / manifest.FILE).write_text(json.dumps(facts))
    with pytest.raises(fulmen.ConfigurationError, match=r"fulmen 9\.4\.0.*pip install "
                                                        r"'fulmen>=9\.4\.0'"):
        canonical.read_directory(directory)
    content = torch.load(saved, weights_only=True)
    content[manifest.KEY].update(format=manifest.FORMAT + 1, fulmen="9.4.0")
    newer = tmp_path / "newer.ckpt"
    torch.save(content, newer)
    with pytest.raises(fulmen.ConfigurationError, match=r"pip install 'fulmen>=9\.4\.0'"):
        AdamTiny.load_from_checkpoint(newer)
    target = tmp_path / "never.ckpt"
    done = cli("convert", newer, target, "--to", "file")
    assert done.returncode == 2 and "fulmen>=9.4.0" in done.stderr and not target.exists()
