"""Saves are atomic: a process SIGKILLed in the middle of a ModelCheckpoint save leaves the
earlier checkpoints intact and only a temporary file named after its pid, which the next save
into that folder removes; an exception during a save leaves nothing behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from processes import clean_environment
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.api.checkpoint_io import TorchCheckpointIO
from fulmen.callbacks import ModelCheckpoint
from fulmen.checkpoint import atomic

pytestmark = pytest.mark.timeout(120)
SCRIPTS = Path(__file__).parent / "scripts"


def kill_during_third_save(tmp_path: Path, dirpath: Path, *flags: str) -> int:
    """Run scripts/slow_save.py (``flags`` added) and SIGKILL it while its third save writes;
    returns its pid."""
    child = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "slow_save.py"), "--out", str(tmp_path), "--dirpath",
         str(dirpath), *flags], env={**clean_environment([SCRIPTS]), "OMP_NUM_THREADS": "1"},
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not (tmp_path / "saving").exists():
            assert child.poll() is None, child.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the third save never started"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
    return child.pid


def test_a_save_killed_midway_leaves_old_checkpoints_and_a_temp_the_next_save_removes(
        tmp_path: Path) -> None:
    dirpath = tmp_path / "ckpt"
    pid = kill_during_third_save(tmp_path, dirpath)
    leftovers = [p for p in dirpath.iterdir() if p.name.startswith(".")]
    assert len(leftovers) == 1, leftovers
    assert re.fullmatch(rf"\.epoch=0-step=3\.ckpt\.tmp-{atomic._HOST}-{pid}-\d+",
                        leftovers[0].name), leftovers
    assert sorted(p.name for p in dirpath.iterdir() if not p.name.startswith(".")) == \
        ["epoch=0-step=1.ckpt", "epoch=0-step=2.ckpt"]
    assert leftovers[0].exists()  # what a killed save leaves ...
    assert torch.load(dirpath / "epoch=0-step=2.ckpt", weights_only=True)["global_step"] == 2

    trainer = fulmen.Trainer(**{**lean(max_epochs=1, limit_train_batches=1),
                                "enable_checkpointing": True},
                             callbacks=[ModelCheckpoint(dirpath=dirpath, filename="next")])
    trainer.fit(TinyModule(), loader(16))
    assert not leftovers[0].exists()  # ... the next save in that folder removes
    assert sorted(p.name for p in dirpath.iterdir()) == \
        ["epoch=0-step=1.ckpt", "epoch=0-step=2.ckpt", "next.ckpt"]


def test_temporaries_of_live_processes_and_other_hosts_are_kept(tmp_path: Path) -> None:
    mine = tmp_path / f".a.ckpt.tmp-{atomic._HOST}-{os.getpid()}-7"
    other_host = tmp_path / ".a.ckpt.tmp-elsewhere-999999999-0"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    gone = tmp_path / f".b.ckpt.tmp-{atomic._HOST}-{dead}-0"
    for path in (mine, other_host, gone):
        path.write_bytes(b"partial")
    TorchCheckpointIO().save_checkpoint({"a": torch.ones(2)}, tmp_path / "c.ckpt")
    assert mine.exists() and other_host.exists() and not gone.exists()


class Unpicklable:
    def __reduce__(self) -> str:
        raise RuntimeError("cannot save this")


def test_a_failed_save_removes_its_temporary_and_keeps_the_old_file(tmp_path: Path) -> None:
    io = TorchCheckpointIO()
    io.save_checkpoint({"v": torch.zeros(3)}, tmp_path / "x.ckpt")
    with pytest.raises(RuntimeError, match="cannot save this"):
        io.save_checkpoint({"v": Unpicklable()}, tmp_path / "x.ckpt")
    assert [p.name for p in tmp_path.iterdir()] == ["x.ckpt"]
    assert torch.equal(io.load_checkpoint(tmp_path / "x.ckpt")["v"], torch.zeros(3))


def test_replacing_a_directory_leaves_only_the_new_one(tmp_path: Path) -> None:
    old, new = tmp_path / "ckpt", tmp_path / "staging"
    old.mkdir(), new.mkdir()
    (old / "a").write_text("old")
    (new / "a").write_text("new")
    atomic.replace_directory(new, old)
    assert (old / "a").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # nothing left to delete later


def test_overwriting_a_file_leaves_only_the_checkpoint(tmp_path: Path) -> None:
    """Right after a save over an older checkpoint, the folder holds the checkpoint alone
    (Lightning's test_none_monitor_not_alternating lists it)."""
    io = TorchCheckpointIO()
    io.save_checkpoint({"v": torch.zeros(3)}, tmp_path / "x.ckpt")
    io.save_checkpoint({"v": torch.ones(3)}, tmp_path / "x.ckpt")
    assert [p.name for p in tmp_path.iterdir()] == ["x.ckpt"]
    assert torch.equal(io.load_checkpoint(tmp_path / "x.ckpt")["v"], torch.ones(3))


@pytest.mark.parametrize("exists", ["file", "link", "nothing"])
def test_replace_file_gives_the_new_content_one_name(tmp_path: Path, exists: str) -> None:
    """On Linux an existing file is exchanged with the new one (renameat2) and then deleted;
    a symlink, a missing target, or a system without the exchange get a plain rename."""
    target, source, other = tmp_path / "x.ckpt", tmp_path / ".x.tmp", tmp_path / "other"
    if exists == "file":
        target.write_text("old")
    elif exists == "link":
        other.write_text("other")
        target.symlink_to(other)
    source.write_text("new")
    atomic.replace_file(source, target)
    assert target.read_text() == "new" and not target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["other", "x.ckpt"] if exists == "link" else ["x.ckpt"])
    if exists == "link":
        assert other.read_text() == "other"  # what the link pointed to is left alone


def test_discard_removes_every_name_at_once_and_leaves_link_targets(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    old = tmp_path / "old"
    (old / "rng").mkdir(parents=True)
    (old / "__0_0.distcp").write_bytes(b"x" * 4096)
    (old / "rng" / "rank_0.pt").write_bytes(b"y")
    (old / "link").symlink_to(outside)
    (old / "dirlink").symlink_to(tmp_path)
    atomic.discard(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt"]
    assert outside.read_text() == "keep"
    single = tmp_path / "single.ckpt"
    single.write_bytes(b"z" * 4096)
    atomic.discard(single)
    assert not single.exists()


def test_releasing_cached_pages_keeps_the_data_dirty_or_written(tmp_path: Path) -> None:
    """The replaced file's page cache is dropped before a save; what it held stays readable,
    whether or not it reached the disk yet (dirty pages are kept)."""
    from fulmen.checkpoint.atomic import release_cached_pages

    dirty, written = tmp_path / "dirty.bin", tmp_path / "written.bin"
    data = os.urandom(3 << 20)
    dirty.write_bytes(data)
    written.write_bytes(data[::-1])
    with open(written, "rb") as handle:
        os.fsync(handle.fileno())
    for file in (dirty, written):
        release_cached_pages(file)
    release_cached_pages(tmp_path / "missing.bin")  # nothing there: nothing to do
    assert dirty.read_bytes() == data and written.read_bytes() == data[::-1]
