"""A crafted DeepSpeed checkpoint directory never runs its payload.

Each file of a real checkpoint directory (model states, optimizer states, fulmen's metadata,
``latest``) is replaced by a pickle whose ``__reduce__`` would create a marker file, both as a
``torch.save`` zip and as a bare pickle. ``Trainer(strategy="deepspeed").test(ckpt_path=dir)``
(and ``fit``, where DeepSpeed's engine reads the shards) and
``fulmen_deepspeed.consolidation(dir)`` must refuse every one, naming the file, and the
marker must never appear. The untouched directory still loads.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from fulmen import ConfigurationError

pytestmark = [pytest.mark.timeout(240)]
pytest.importorskip("deepspeed")

FILES = ("checkpoint/mp_rank_00_model_states.pt",
         "checkpoint/zero_pp_rank_0_mp_rank_00_optim_states.pt", "fulmen_meta.pt")


class Payload:
    """Creates ``marker`` when unpickled by an unrestricted unpickler."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> Any:
        return (os.makedirs, (self.marker,))


def craft(good: Path, tmp: Path, relative: str, form: str, marker: Path) -> Path:
    """A copy of ``good`` whose ``relative`` file holds the payload (``zip`` or ``pickle``)."""
    bad = tmp / f"{relative.replace('/', '_')}-{form}.ckpt"
    shutil.copytree(good, bad)
    target = bad / relative
    content = {"module": {"x": Payload(marker)}, "optimizer_state_dict": Payload(marker)}
    if form == "zip":
        torch.save(content, target)
    else:
        target.write_bytes(pickle.dumps(content, protocol=2))
    return bad


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory, run_script_module: Any) -> Path:
    where = tmp_path_factory.mktemp("ds") / "good.ckpt"
    run = run_script_module("ds_crafted.py", "--write", str(where))
    assert run.returncode == 0, run.stderr[-3000:]
    assert all((where / name).is_file() for name in FILES), sorted(where.rglob("*"))
    return where


@pytest.fixture(scope="module")
def run_script_module(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from processes import script_runner

    return script_runner(tmp_path_factory.mktemp("runs"), Path(__file__).parent / "scripts",
                         200, drop=("DS_ACCELERATOR", "LOCAL_SIZE"))


@pytest.mark.parametrize("relative", FILES)
@pytest.mark.parametrize("form", ["zip", "pickle"])
def test_consolidate_refuses_a_crafted_file(good: Path, tmp_path: Path, relative: str,
                                            form: str) -> None:
    from fulmen_deepspeed import consolidate

    marker = tmp_path / "PWNED"
    bad = craft(good, tmp_path, relative, form, marker)
    with pytest.raises(ConfigurationError) as caught:
        consolidate(bad, tmp_path / "out.pt")
    message = str(caught.value)
    assert str(bad / relative) in message and "not a trusted checkpoint" in message
    assert "unsafe global 'os.makedirs'" in message
    assert not marker.exists() and not (tmp_path / "out.pt").exists()


def test_consolidate_refuses_a_latest_file_that_points_elsewhere(good: Path,
                                                                  tmp_path: Path) -> None:
    from fulmen_deepspeed import consolidate

    marker = tmp_path / "PWNED"
    for index, text in enumerate([pickle.dumps(Payload(marker)), b"../../etc", b"/etc"]):
        bad = tmp_path / f"latest{index}.ckpt"
        shutil.copytree(good, bad)
        (bad / "checkpoint").rename(bad / "global_step4")
        (bad / "latest").write_bytes(text)
        with pytest.raises(ConfigurationError, match="does not name a checkpoint folder"):
            consolidate(bad)
    assert not marker.exists()


def test_consolidate_still_reads_a_good_directory_and_one_tagged_by_latest(
        good: Path, tmp_path: Path) -> None:
    from fulmen_deepspeed import consolidate

    state = consolidate(good)
    assert set(state) == {"net.weight", "net.bias"}
    moved = tmp_path / "moved.ckpt"
    shutil.copytree(good, moved)
    (moved / "checkpoint").rename(moved / "global_step4")
    (moved / "latest").write_text("global_step4")
    (moved / "fulmen_manifest.json").unlink()  # as a plain DeepSpeed directory has none
    assert all(torch.equal(state[k], v) for k, v in consolidate(moved).items())


def test_trainer_test_refuses_every_crafted_file_and_runs_none(good: Path, tmp_path: Path,
                                                               run_script_module: Any) -> None:
    marker = tmp_path / "PWNED"
    crafted = {craft(good, tmp_path, relative, form, marker): relative
               for relative in FILES for form in ("zip", "pickle")}
    latest = tmp_path / "latest.ckpt"  # never unpickled; the manifest sees it was replaced
    shutil.copytree(good, latest)
    (latest / "latest").write_bytes(pickle.dumps(Payload(marker)))
    run = run_script_module("ds_crafted.py", "--dirs", *map(str, crafted), str(latest),
                            str(good))
    assert run.returncode == 0, run.stderr[-3000:]
    results = run.json("rank0")
    for bad, relative in crafted.items():
        message = results[str(bad)]
        assert message.startswith("UnsafeCheckpointError: "), message
        assert str(bad / relative) in message and "not a trusted checkpoint" in message
    assert results[str(latest)].startswith(f"CorruptCheckpointError: checkpoint file "
                                           f"'{latest / 'latest'}' has ")
    assert results[str(good)] == "ok"
    assert not marker.exists()


def test_resuming_fit_through_the_engine_refuses_a_crafted_optimizer_shard(
        good: Path, tmp_path: Path, run_script_module: Any) -> None:
    marker = tmp_path / "PWNED"
    bad = craft(good, tmp_path, FILES[1], "zip", marker)
    run = run_script_module("ds_crafted.py", "--fit", "--dirs", str(bad), str(good))
    assert run.returncode == 0, run.stderr[-3000:]
    results = run.json("rank0")
    assert results[str(bad)].startswith("UnsafeCheckpointError: "), results
    assert str(bad / FILES[1]) in results[str(bad)]
    assert results[str(good)] == "ok" and not marker.exists()


def cli(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fulmen", "checkpoint", *map(str, args)],
                          capture_output=True, text=True, timeout=90)


def test_the_checkpoint_command_inspects_verifies_and_refuses_deepspeed_directories(
        good: Path, tmp_path: Path) -> None:
    report = json.loads(cli("inspect", good, "--json").stdout)
    assert report["kind"] == "deepspeed" and report["origin"]["strategy"] == "deepspeed_stage_2"
    assert report["tensors"]["state_dict.net.weight"] == \
        {"shape": [2, 8], "dtype": "float32", "bytes": 64}
    assert report["progress"]["global_step"] == 2
    assert cli("verify", good).stdout.strip() == f"OK {good}"

    flipped = tmp_path / "flipped.ckpt"
    shutil.copytree(good, flipped)
    shard = flipped / FILES[1]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    done = cli("verify", flipped)
    assert done.returncode == 1
    assert f"FAIL '{shard}' does not match its crc32c in fulmen_manifest.json" in done.stdout

    cut = tmp_path / "cut.ckpt"
    shutil.copytree(good, cut)
    (cut / FILES[1]).write_bytes((good / FILES[1]).read_bytes()[:-100])
    from fulmen_deepspeed import consolidate

    with pytest.raises(ConfigurationError, match=rf"'{cut / FILES[1]}' .*truncated or corrupt"):
        consolidate(cut)

    marker = tmp_path / "PWNED"
    bad = craft(good, tmp_path, FILES[0], "zip", marker)
    done = cli("inspect", bad)
    assert done.returncode == 2 and f"'{bad / FILES[0]}' is not a trusted" in done.stderr
    assert not marker.exists()


class Opaque:
    """A harmless object safe loading still refuses (it is not on the allow-list)."""


def test_a_caller_who_trusts_the_directory_can_opt_in(good: Path, tmp_path: Path) -> None:
    from fulmen_deepspeed.consolidation import fp32_state_dict

    odd = tmp_path / "odd.ckpt"
    shutil.copytree(good, odd)
    meta = torch.load(odd / "fulmen_meta.pt", weights_only=True)
    torch.save({**meta, "hyper_parameters": {"thing": Opaque()}}, odd / "fulmen_meta.pt")
    (odd / "fulmen_manifest.json").unlink()
    with pytest.raises(ConfigurationError, match=r"unsafe global '.*Opaque'"):
        fp32_state_dict(odd)
    assert set(fp32_state_dict(odd, trusted=True)) == {"net.weight", "net.bias"}
