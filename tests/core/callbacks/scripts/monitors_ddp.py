"""The monitoring callbacks and both progress bars under ``ddp`` on two CPU processes: rank zero
logs throughput (world size 2: global rates), learning rates and device statistics; other ranks
draw and log nothing. Writes ``<out>/rank<R>.json`` from every process."""

from __future__ import annotations

import argparse
import json
from io import StringIO
from pathlib import Path

import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import (
    DeviceStatsMonitor,
    LearningRateMonitor,
    RichProgressBar,
    ThroughputMonitor,
    TQDMProgressBar,
)
from fulmen.loggers import CSVLogger


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--bar", choices=["tqdm", "rich"], default="tqdm")
    args = parser.parse_args()
    torch.set_num_threads(1)
    output = StringIO()
    bar = TQDMProgressBar(interactive=True) if args.bar == "tqdm" else RichProgressBar(
        console_kwargs={"file": output, "force_terminal": True})
    throughput = ThroughputMonitor(batch_size_fn=lambda batch: len(batch), window_size=2)
    lr = LearningRateMonitor()
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2,
                             limit_train_batches=4, limit_val_batches=2, log_every_n_steps=1,
                             logger=CSVLogger(args.out), enable_checkpointing=False,
                             callbacks=[bar, throughput, lr, DeviceStatsMonitor()])
    trainer.fit(BoringModel())
    logged = trainer.logged_metrics
    (args.out / f"rank{trainer.global_rank}.json").write_text(json.dumps({
        "bar_disabled": bar.is_disabled, "lrs": lr.lrs,
        "train_keys": sorted(k for k in logged if k.startswith("train/")),
        "samples_per_sec": logged.get("train/samples_per_sec"),
        "device_samples_per_sec": logged.get("train/device/samples_per_sec"),
        "rich_output": output.getvalue()[-2000:],
    }))


if __name__ == "__main__":
    main()
