"""Lightning's ``python -m lightning.pytorch.utilities.upgrade_checkpoint PATH``: upgrade old
Lightning checkpoint files in place (a ``.bak`` copy of each is kept) with
:func:`fulmen.utilities.migration.migrate_checkpoint`. Also
``python -m fulmen.utilities.upgrade_checkpoint PATH``."""

from __future__ import annotations

import logging
import shutil
import sys
from argparse import ArgumentParser
from collections.abc import Sequence
from pathlib import Path

from fulmen.utilities.migration import migrate_checkpoint, pl_legacy_patch

__all__ = ["main", "upgrade"]

log = logging.getLogger(__name__)


def upgrade(path: str | Path, extension: str = ".ckpt", map_to_cpu: bool = False) -> list[Path]:
    """Upgrade the checkpoint file ``path``, or every ``*<extension>`` file under the folder
    ``path``; returns the files upgraded. An existing ``.bak`` is never overwritten (it is the
    original)."""
    import torch

    root = Path(path).absolute()
    extension = extension if extension.startswith(".") else f".{extension}"
    if not root.exists():
        raise FileNotFoundError(f"The path {root} does not exist. Please provide a valid path to a "
                                "checkpoint file or a directory containing checkpoints ending in "
                                f"{extension}.")
    files = [root] if root.is_file() else sorted(root.rglob(f"*{extension}"))
    if not files:
        raise FileNotFoundError(f"No checkpoint files with extension {extension} were found in "
                                f"{root}. HINT: Try setting the `--extension` option to specify "
                                "the right file extension to look for.")
    log.info("Creating a backup of the existing checkpoint files before overwriting in the upgrade "
             "process.")
    for file in files:
        backup = file.with_suffix(".bak")
        if not backup.exists():
            shutil.copyfile(file, backup)
    log.info("Upgrading checkpoints ...")
    for file in files:
        with pl_legacy_patch():
            checkpoint = torch.load(file, map_location=torch.device("cpu") if map_to_cpu else None)
        migrate_checkpoint(checkpoint)
        torch.save(checkpoint, file)
    log.info("Done.")
    return files


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``PATH [--extension .ckpt] [--map-to-cpu]``."""
    parser = ArgumentParser(description="A utility to upgrade old checkpoints to the format of the "
                            "current Lightning version. This will also save a backup of the "
                            "original files.")
    parser.add_argument("path", type=str,
                        help="Path to a checkpoint file or a directory with checkpoints to upgrade")
    parser.add_argument("--extension", "-e", type=str, default=".ckpt",
                        help="The file extension to look for when searching for checkpoint files "
                        "in a directory.")
    parser.add_argument("--map-to-cpu", action="store_true",
                        help="Map all tensors in the checkpoint to CPU. Enable this option if you "
                        "are converting a GPU checkpoint on a machine without GPUs.")
    args = parser.parse_args(argv)
    try:
        upgrade(args.path, args.extension, args.map_to_cpu)
    except FileNotFoundError as exc:
        log.error("%s", exc)
        sys.exit(1)


if __name__ == "__main__":
    main()
