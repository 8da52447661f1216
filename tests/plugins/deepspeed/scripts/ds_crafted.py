"""Writes a real one-process DeepSpeed checkpoint (``--write DIR``), and tries
``Trainer(strategy=...).test(ckpt_path=dir)`` (``--fit``: ``fit``) on each ``--dirs`` entry;
records per directory the error (type and message) or ``"ok"`` in <out>/rank0.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(8, 2)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def test_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("test_loss", torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.1)


def trainer(strategy: str, **flags: Any) -> fulmen.Trainer:
    return fulmen.Trainer(accelerator="cpu", devices=1, strategy=strategy, logger=False,
                          enable_progress_bar=False, enable_checkpointing=False,
                          enable_model_summary=False, **flags)


def write_engine_directory(fitted: fulmen.Trainer, target: Path) -> None:
    """The layout fulmen-deepspeed wrote before the canonical checkpoint (DeepSpeed's own
    shards under ``checkpoint/``, ``fulmen_meta.pt``, ``fulmen_manifest.json``), which must still
    be read, safely."""
    from fulmen.checkpoint import manifest

    fitted.strategy.engine.save_checkpoint(str(target), tag="checkpoint")
    fitted.save_checkpoint(target.with_suffix(".tmp"))
    meta = torch.load(target.with_suffix(".tmp"), weights_only=True)
    target.with_suffix(".tmp").unlink()
    meta.pop("state_dict")
    meta.pop("optimizer_states")
    meta["fulmen_deepspeed"] = {"modules": ["state_dict"], "optimizers": {"optimizer_states": 1},
                                "prefix": "module.", "stage": fitted.strategy.stage}
    torch.save(meta, target / "fulmen_meta.pt")
    manifest.write_directory_manifest(target, meta.get(manifest.KEY))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--strategy", default="deepspeed_stage_2")
    parser.add_argument("--write", default=None)
    parser.add_argument("--dirs", nargs="*", default=[])
    parser.add_argument("--fit", action="store_true", help="resume fit (the engine loads)")
    args = parser.parse_args()
    data = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,))),
                      batch_size=8)
    if args.write:
        fitted = trainer(args.strategy, max_epochs=1)
        fitted.fit(Model(), data)
        write_engine_directory(fitted, Path(args.write))
    results: dict[str, str] = {}
    for path in args.dirs:
        try:
            if args.fit:
                trainer(args.strategy, max_epochs=2).fit(Model(), data, ckpt_path=path)
            else:
                trainer(args.strategy).test(Model(), data, ckpt_path=path, verbose=False)
            results[path] = "ok"
        except Exception as exc:  # recorded for the test to judge
            results[path] = f"{type(exc).__name__}: {exc}"
    (Path(args.out) / "rank0.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main()
