"""Manifest checksums: CRC-32C for new directories, sha256 of older manifests still verifies."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fulmen.checkpoint import manifest


def _directory(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "ckpt"
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def test_new_manifests_record_crc32c_and_verify(tmp_path: Path) -> None:
    root = _directory(tmp_path, {"__0_0.distcp": b"x" * 5000, "empty.bin": b""})
    manifest.write_directory_manifest(root, {"format": manifest.FORMAT})
    files = json.loads((root / manifest.FILE).read_text())["files"]
    # 0xe3069283 is CRC-32C's check value for b"123456789" (RFC 3720)
    (tmp_path / "check").write_bytes(b"123456789")
    assert manifest.crc32c(tmp_path / "check") == "e3069283"
    assert set(files["__0_0.distcp"]) == {"bytes", "crc32c"}
    assert files["empty.bin"] == {"bytes": 0, "crc32c": "00000000"}
    assert manifest.verify(root) == []


def test_a_changed_byte_fails_its_checksum_and_is_named(tmp_path: Path) -> None:
    root = _directory(tmp_path, {"__0_0.distcp": b"x" * 5000})
    manifest.write_directory_manifest(root, {"format": manifest.FORMAT})
    data = bytearray((root / "__0_0.distcp").read_bytes())
    data[4000] ^= 1
    (root / "__0_0.distcp").write_bytes(bytes(data))
    problems = manifest.verify(root)
    assert len(problems) == 1 and "__0_0.distcp" in problems[0]
    assert "does not match its crc32c" in problems[0]


def test_sha256_manifests_of_older_versions_still_verify(tmp_path: Path) -> None:
    data = b"y" * 3000
    root = _directory(tmp_path, {"__0_0.distcp": data})
    entry = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (root / manifest.FILE).write_text(json.dumps({"files": {"__0_0.distcp": entry}}))
    assert manifest.verify(root) == []
    entry["sha256"] = "0" * 64
    (root / manifest.FILE).write_text(json.dumps({"files": {"__0_0.distcp": entry}}))
    assert "does not match its sha256" in manifest.verify(root)[0]


def test_an_entry_without_a_known_checksum_is_a_problem(tmp_path: Path) -> None:
    root = _directory(tmp_path, {"a.bin": b"z"})
    (root / manifest.FILE).write_text(json.dumps({"files": {"a.bin": {"bytes": 1}}}))
    assert "does not match its checksum" in manifest.verify(root)[0]
