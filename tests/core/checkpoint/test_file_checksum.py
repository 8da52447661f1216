"""Every checkpoint file fulmen writes carries a CRC-32C (in its zip comment), compared before
anything reaches a model, through every entry point; files written before (plain torch.save)
still load and say they carry no checksum."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
import torch
from tiny_models import TinyModule, lean, loader
from torch.utils.data import DataLoader

import fulmen
from fulmen.checkpoint import filesum, safety
from fulmen.checkpoint.tool import main as checkpoint_cli


def saved(tmp_path: Path) -> Path:
    trainer = fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=2))
    trainer.fit(TinyModule(), loader(16))
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    return tmp_path / "a.ckpt"


def flip_in_the_middle(path: Path) -> None:
    """One bit in the middle of the file: inside tensor data, which torch.load never checks."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        record = max(archive.infolist(), key=lambda info: info.file_size)
    data[record.header_offset + 30 + len(record.filename) + 64 + record.file_size // 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_saved_file_carries_its_checksum_and_stays_a_zip_torch_reads(tmp_path: Path) -> None:
    path = saved(tmp_path)
    stored = filesum.stored_in(path)
    assert stored is not None and len(stored) == 8
    with zipfile.ZipFile(path) as archive:
        assert archive.comment == b"fulmen-crc32c:" + stored.encode()
        assert archive.testzip() is None
    assert "state_dict" in torch.load(path, weights_only=True)  # plain torch reads it
    filesum.check(path)


ENTRY_POINTS = {
    "fit": lambda p: fulmen.Trainer(**lean(max_epochs=2, limit_train_batches=2)).fit(
        TinyModule(), loader(16), ckpt_path=p),
    "validate": lambda p: fulmen.Trainer(**lean()).validate(TinyModule(), loader(16),
                                                            ckpt_path=p, verbose=False),
    "test": lambda p: fulmen.Trainer(**lean()).test(TinyModule(), loader(16), ckpt_path=p,
                                                    verbose=False),
    "predict": lambda p: fulmen.Trainer(**lean()).predict(
        TinyModule(), DataLoader(torch.randn(16, 8), batch_size=8), ckpt_path=p),
    "load_from_checkpoint": lambda p: TinyModule.load_from_checkpoint(p),
    "lite.load": lambda p: fulmen.Lite(accelerator="cpu").load(p),
    "lite.load into state": lambda p: fulmen.Lite(accelerator="cpu").load(
        p, {"state_dict": TinyModule()}),
}


def test_a_flipped_byte_is_refused_by_every_entry_point_with_the_file_named(
        tmp_path: Path) -> None:
    path = saved(tmp_path)
    good = path.read_bytes()
    torch.save(torch.load(path, weights_only=True), tmp_path / "plain.ckpt")
    flip_in_the_middle(tmp_path / "plain.ckpt")
    ENTRY_POINTS["load_from_checkpoint"](tmp_path / "plain.ckpt")  # why: torch never notices
    flip_in_the_middle(path)
    for name, attempt in ENTRY_POINTS.items():
        model_before = TinyModule().state_dict()
        with pytest.raises(safety.CorruptCheckpointError) as caught:
            attempt(path)
        message = str(caught.value)
        assert f"checkpoint file '{path}' is corrupt" in message, (name, message)
        assert "do not match the CRC-32C fulmen stored in it" in message, (name, message)
        assert model_before.keys() == TinyModule().state_dict().keys()
    path.write_bytes(good)
    for attempt in ENTRY_POINTS.values():
        attempt(path)


def test_the_checkpoint_command_verifies_and_refuses_to_convert_a_damaged_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = saved(tmp_path)
    assert checkpoint_cli(["verify", str(path)]) == 0
    assert f"(CRC-32C {filesum.stored_in(path)} matches)" in capsys.readouterr().out
    converted = tmp_path / "converted.ckpt"
    assert checkpoint_cli(["convert", str(path), str(converted), "--to", "file"]) == 0
    assert filesum.stored_in(converted) is not None  # convert's output carries one too
    filesum.check(converted)
    flip_in_the_middle(path)
    assert checkpoint_cli(["verify", str(path)]) == 1
    assert "do not match the CRC-32C" in capsys.readouterr().out
    assert checkpoint_cli(["convert", str(path), str(tmp_path / "x.ckpt"), "--to", "file"]) == 2
    assert f"'{path}' is corrupt" in capsys.readouterr().err
    assert not (tmp_path / "x.ckpt").exists()


def test_files_without_a_checksum_load_and_inspect_says_they_carry_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.ckpt"
    torch.save(torch.load(saved(tmp_path), weights_only=True), old)  # as older fulmen wrote
    assert filesum.stored_in(old) is None
    TinyModule.load_from_checkpoint(old)
    fulmen.Lite(accelerator="cpu").load(old)
    assert checkpoint_cli(["inspect", str(old)]) == 0
    assert "checksum: none (this file carries no checksum" in capsys.readouterr().out
    assert checkpoint_cli(["inspect", str(old), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checksum"]["crc32c"] is None
    assert checkpoint_cli(["verify", str(old)]) == 0
    assert "carries no checksum" in capsys.readouterr().out
    assert checkpoint_cli(["inspect", str(tmp_path / "a.ckpt")]) == 0
    assert "compared on every load" in capsys.readouterr().out


def test_remote_files_carry_the_checksum_computed_while_uploading(tmp_path: Path) -> None:
    import fsspec

    lite = fulmen.Lite(accelerator="cpu")
    url = "memory://trust-checksums/a.ckpt"
    lite.save(url, {"w": torch.arange(50_000.0)})
    fs = fsspec.filesystem("memory")
    data = bytearray(fs.cat_file("/trust-checksums/a.ckpt"))
    assert filesum.stored(bytes(data)) is not None
    assert torch.equal(lite.load(url)["w"], torch.arange(50_000.0))
    data[len(data) // 2] ^= 1
    fs.pipe_file("/trust-checksums/a.ckpt", bytes(data))
    with pytest.raises(safety.CorruptCheckpointError, match=rf"checkpoint file '{url}' is corrupt"):
        lite.load(url)
    fs.rm("/trust-checksums", recursive=True)


@pytest.mark.parametrize("sizes", [[1, 1, 1], [3, 1], [1, 5, 2], [64]])
def test_the_writer_stamps_whatever_sizes_torch_writes_in(sizes: list[int]) -> None:
    buffer = io.BytesIO()
    torch.save({"x": torch.arange(10)}, buffer)
    plain = buffer.getvalue()
    out = io.BytesIO()
    writer = filesum.StampingWriter(out)
    chunks, start = [], 0
    for size in sizes * (len(plain) // sum(sizes) + 1):
        chunks.append(plain[start:start + size])
        start += size
    for chunk in chunks:
        writer.write(chunk)
    assert writer.finish()
    stamped = out.getvalue()
    assert stamped[:len(plain) - 2] == plain[:-2]
    assert filesum.stored(stamped) is not None
    assert torch.equal(torch.load(io.BytesIO(stamped), weights_only=True)["x"], torch.arange(10))


def test_something_that_is_not_a_zip_is_written_unchanged() -> None:
    out = io.BytesIO()
    writer = filesum.StampingWriter(out)
    writer.write(b"not a zip at all")
    assert not writer.finish()
    assert out.getvalue() == b"not a zip at all"


class CountingFile(io.FileIO):
    """A file that counts the bytes read from it."""

    read_bytes = 0

    def readinto(self, buffer):  # type: ignore[no-untyped-def]
        got = super().readinto(buffer)
        self.read_bytes += got or 0
        return got


def stamped_file(tmp_path: Path, tensors: int = 8, numel: int = 1 << 18) -> Path:
    path = tmp_path / "big.ckpt"
    with open(path, "wb") as handle:
        filesum.save({f"t{i}": torch.full((numel,), float(i)) for i in range(tensors)}, handle)
    return path


def test_a_load_reads_the_file_once_and_sums_what_torch_reads(tmp_path: Path) -> None:
    """The checksum is computed from the bytes torch.load reads (no second pass): the file is
    read about once, not twice, and the dictionary is whole."""
    path = stamped_file(tmp_path)
    size = path.stat().st_size
    with CountingFile(path, "rb") as handle:
        content = filesum.load_from(handle, path, weights_only=True)
        read = handle.read_bytes
    assert torch.equal(content["t7"], torch.full((1 << 18,), 7.0))
    assert size <= read <= size * 1.01 + 65536, (read, size)


def test_the_reader_sums_the_file_whatever_order_it_is_read_in(tmp_path: Path) -> None:
    """Bytes read out of order (an old torch wrote records out of order, and the zip's
    directory is read first) are summed once, in file order, by the end."""
    import random

    path = stamped_file(tmp_path, tensors=3, numel=50_000)
    size = path.stat().st_size
    expected = filesum.stored_in(path)
    cuts = sorted(random.Random(0).sample(range(1, size), 40))
    pieces = list(zip([0, *cuts], [*cuts, size]))
    random.Random(1).shuffle(pieces)
    with CountingFile(path, "rb") as handle:
        reader = filesum.HashingReader(handle, size - filesum.COMMENT - 2)
        for start, stop in pieces:
            reader.seek(start)
            assert len(reader.read(stop - start)) == stop - start
        assert f"{reader.finish():08x}" == expected


def test_damage_torch_load_trips_over_is_reported_as_the_checksum_mismatch(
        tmp_path: Path) -> None:
    path = stamped_file(tmp_path, tensors=2, numel=1000)
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x01\x02")  # the zip's central directory, read first by torch.load
    data[at + 10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(safety.CorruptCheckpointError, match="do not match the CRC-32C"):
        filesum.load(path, weights_only=True)
