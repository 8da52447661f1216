"""``fulmen-deepspeed consolidate CKPT_DIR OUT.pt``: one fp32 state dict from a checkpoint."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fulmen-deepspeed",
                                     description="Tools for fulmen's DeepSpeed checkpoints.")
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser(
        "consolidate", help="merge a checkpoint directory into one fp32 state dict file "
                            "(loadable with torch.load(path, weights_only=True))")
    merge.add_argument("ckpt_dir", metavar="CKPT_DIR")
    merge.add_argument("out", metavar="OUT.pt")
    args = parser.parse_args(argv)
    from fulmen import ConfigurationError
    from fulmen_deepspeed.consolidation import consolidate

    try:
        state = consolidate(args.ckpt_dir, args.out)
    except ConfigurationError as exc:
        print(f"fulmen-deepspeed: {exc}", file=sys.stderr)
        return 2
    count = sum(t.numel() for t in state.values())
    print(f"wrote {args.out}: {len(state)} tensors, {count} values (float32)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
