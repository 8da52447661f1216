"""CSVLogger and TensorBoardLogger write real files; versions; hyper-parameters."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.loggers import CSVLogger


def fit_with(logger: object, root: Path, epochs: int = 2) -> fulmen.Trainer:
    trainer = fulmen.Trainer(**lean(max_epochs=epochs, logger=logger, default_root_dir=root,
                                    log_every_n_steps=2))
    trainer.fit(TinyModule(lr=0.05), loader(n=32), loader(n=16))
    return trainer


def test_csv_logger_writes_metrics_and_hparams(tmp_path):
    logger = CSVLogger(tmp_path)
    fit_with(logger, tmp_path)
    run_dir = tmp_path / "fulmen_logs" / "version_0"
    assert logger.log_dir == str(run_dir)
    rows = list(csv.DictReader((run_dir / "metrics.csv").read_text().splitlines()))
    steps = [int(r["step"]) for r in rows if r["train_loss"]]
    assert steps == [1, 3, 5, 7]
    assert [r["val_acc"] for r in rows if r["val_acc"]] and all(
        float(r["epoch"]) in (0.0, 1.0) for r in rows)
    assert yaml.safe_load((run_dir / "hparams.yaml").read_text())["lr"] == 0.05


def test_versions_increase_per_run(tmp_path):
    for _ in range(2):
        fit_with(CSVLogger(tmp_path), tmp_path, epochs=1)
    assert sorted(p.name for p in (tmp_path / "fulmen_logs").iterdir()) == ["version_0",
                                                                            "version_1"]


def test_tensorboard_logger_writes_event_files_tensorboard_reads(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fulmen.loggers import TensorBoardLogger

    logger = TensorBoardLogger(tmp_path)
    fit_with(logger, tmp_path)
    run_dir = Path(logger.log_dir)
    assert list(run_dir.glob("events.out.tfevents.*"))
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert [e.step for e in events.Scalars("train_loss")] == [1, 3, 5, 7]
    assert {"val_acc", "val_loss", "epoch"} <= set(events.Tags()["scalars"])
    assert (run_dir / "hparams.yaml").exists()


def test_tensorboard_metrics_are_written_without_a_writer_thread(tmp_path):
    """Metrics and hyper-parameters are framed and written by the training process: a fit
    with the TensorBoard logger runs no thread a fit without a logger does not."""
    pytest.importorskip("tensorboard")
    import threading

    from fulmen.loggers import TensorBoardLogger

    class Threads(fulmen.Callback):
        def on_train_end(self, trainer, module):
            self.count = threading.active_count()

    counts = []
    for logger in (False, TensorBoardLogger(tmp_path)):
        probe = Threads()
        trainer = fulmen.Trainer(**lean(max_epochs=1, logger=logger, default_root_dir=tmp_path,
                                        log_every_n_steps=1, callbacks=[probe]))
        trainer.fit(TinyModule(lr=0.05), loader(n=32))
        counts.append(probe.count)
    assert counts[0] == counts[1]


@pytest.mark.parametrize("size", [0, 1, 37, 4096])
def test_tensorboard_records_are_framed_as_tensorboards_record_writer_frames_them(size):
    """fulmen frames event records with a C CRC-32C; the bytes are TensorBoard's own."""
    pytest.importorskip("tensorboard")
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    from fulmen.loggers.tb_events import frame

    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    theirs = io.BytesIO()
    RecordWriter(theirs).write(data)
    assert frame(data) == theirs.getvalue()


def test_tensorboard_events_are_readable_after_save_and_beside_experiment(tmp_path):
    """``save()`` flushes the metrics file (TensorBoard sees them while the run goes on); what
    goes through ``experiment`` (a SummaryWriter) lands in the same run folder."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fulmen.loggers import TensorBoardLogger

    logger = TensorBoardLogger(tmp_path, version=0)
    logger.log_hyperparams({"lr": 0.1})
    logger.log_metrics({"loss": 0.5, "acc": 0.25}, step=3)
    logger.save()
    events = EventAccumulator(logger.log_dir)
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(3, 0.5)]
    assert [e.value for e in events.Scalars("acc")] == [0.25]
    assert "hparams/text_summary" in events.Tags()["tensors"]  # as add_text writes it
    logger.experiment.add_scalar("extra", 2.0, 4)
    logger.finalize("success")
    events = EventAccumulator(logger.log_dir)
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("extra")] == [(4, 2.0)]
    assert len(list(Path(logger.log_dir).glob("events.out.tfevents.*"))) == 2


def test_logger_true_picks_tensorboard_when_installed(tmp_path):
    pytest.importorskip("tensorboard")
    trainer = fulmen.Trainer(default_root_dir=tmp_path, enable_progress_bar=False)
    assert type(trainer.logger).__name__ == "TensorBoardLogger"
    assert trainer.log_dir == str(tmp_path / "fulmen_logs" / "version_0")


def test_tensorboard_metrics_reach_an_fsspec_url(tmp_path):
    """At a URL (fsspec's ``memory://`` here) the metrics event file is written through fsspec:
    TensorBoard's record framing, a version event first, then one event per call."""
    pytest.importorskip("tensorboard")
    import struct

    import fsspec
    from tensorboard.compat.proto.event_pb2 import Event

    from fulmen.loggers import TensorBoardLogger

    logger = TensorBoardLogger("memory://fulmen-tb", version=0)
    logger.log_metrics({"loss": 1.5}, step=2)
    logger.log_metrics({"loss": 0.5}, step=4)
    logger.finalize("success")
    fs = fsspec.filesystem("memory")
    [path] = fs.glob("/fulmen-tb/fulmen_logs/version_0/events.out.tfevents.*")
    data, events = fs.cat(path), []
    while data:
        (length,) = struct.unpack("<Q", data[:8])
        events.append(Event.FromString(data[12:12 + length]))
        data = data[16 + length:]
    assert events[0].file_version == "brain.Event:2"
    assert [(e.step, [(v.tag, v.simple_value) for v in e.summary.value]) for e in events[1:]] == \
        [(2, [("loss", 1.5)]), (4, [("loss", 0.5)])]


def test_tensorboard_logger_used_again_after_finalize_keeps_both_files(tmp_path):
    """A Trainer's second fit logs again after the first one finalized the logger: a new event
    file, never the first one overwritten (even within the same second)."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fulmen.loggers import TensorBoardLogger

    logger = TensorBoardLogger(tmp_path, version=0)
    for step in (1, 2):
        logger.log_metrics({"loss": float(step)}, step=step)
        logger.finalize("success")
    assert len(list(Path(logger.log_dir).glob("events.out.tfevents.*"))) == 2
    events = EventAccumulator(logger.log_dir)
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(1, 1.0), (2, 2.0)]
