"""Report the CPU threads each rank runs with (ddp or ddp_spawn, 2 or 4 processes)."""

import argparse
import json
from pathlib import Path

import torch

import fulmen


def report(lite: fulmen.Lite, out: str) -> None:
    threads = lite.all_gather(torch.tensor(torch.get_num_threads()))
    if lite.is_global_zero:
        Path(out, "threads.json").write_text(json.dumps(threads.tolist()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy")
    parser.add_argument("--devices", type=int)
    parser.add_argument("--out")
    args = parser.parse_args()
    fulmen.Lite(accelerator="cpu", devices=args.devices, strategy=args.strategy).launch(
        report, args.out)
