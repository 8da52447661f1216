"""The one-process checks of a logger plugin (clauses in :mod:`fulmen.testing.logger_clauses`).

Each check builds fresh loggers with the class's ``for_conformance(folder)`` (offline, local,
no credentials), trains a tiny module with the Trainer, and reads the run back with the
logger's ``read_run()`` (the tracker's own client or files).
"""

from __future__ import annotations

import itertools
import os
import pickle
import time
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen
from fulmen.api.logger import Logger, RunRecord
from fulmen.errors import LoggerWarning
from fulmen.testing.record import Recorder, Skip
from fulmen.utilities.rank_zero import current_rank, set_rank

STEPS = 6
PARAMS = ("lr", "activation", "loss_fn")


class LoggingModule(fulmen.Module):
    """Logs ``train_loss`` every step and ``val_loss`` per validation; hyper-parameters hold a
    number, a module and a function. ``fail_at``: raise in that training step."""

    def __init__(self, lr: float = 0.1, activation: torch.nn.Module | None = None,
                 loss_fn: Any = F.mse_loss, fail_at: int = -1) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["fail_at"])
        self.activation = activation or torch.nn.Tanh()
        self.net = torch.nn.Linear(4, 1)
        self.fail_at = fail_at

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if self.global_step == self.fail_at:
            raise RuntimeError("the kit's training step fails here on purpose")
        loss = self.hparams.loss_fn(self.activation(self.net(batch[0])), batch[1])
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", self.hparams.loss_fn(self.net(batch[0]), batch[1]))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self) -> Any:
        return _loader(16)

    def val_dataloader(self) -> Any:
        return _loader(8)


def module(fail_at: int = -1) -> LoggingModule:
    """Hyper-parameters: a number, a module and a function (the last two as references)."""
    return LoggingModule(activation=torch.nn.Tanh(), fail_at=fail_at)


def _loader(n: int) -> DataLoader[Any]:
    g = torch.Generator().manual_seed(n)
    return DataLoader(TensorDataset(torch.randn(n, 4, generator=g), torch.randn(n, 1, generator=g)),
                      batch_size=4)


def trainer(folder: Path, logger: Logger, **flags: Any) -> fulmen.Trainer:
    return fulmen.Trainer(**{
        "accelerator": "cpu", "devices": 1, "logger": logger, "max_steps": STEPS,
        "log_every_n_steps": 1, "enable_checkpointing": False, "enable_progress_bar": False,
        "enable_model_summary": False, "default_root_dir": str(folder),
        "num_sanity_val_steps": 0, **flags})


def fit_logged(trainer: fulmen.Trainer, model: fulmen.Module, **kwargs: Any) -> None:
    """``trainer.fit``; a logger failure (a ``LoggerWarning``: the Trainer left the logger out
    and went on) fails the clause with its message."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LoggerWarning)
        trainer.fit(model, **kwargs)
    failed = [str(w.message) for w in caught if issubclass(w.category, LoggerWarning)]
    assert not failed, failed[0]


def read(logger: Logger) -> RunRecord:
    run = logger.read_run()
    if run is None:
        raise Skip(f"{type(logger).__qualname__}.read_run() returns None: the kit cannot read the "
                   "run back to compare it with what was logged")
    return run


def steps_problems(run: RunRecord, expected: list[int]) -> list[str]:
    problems = []
    for key, points in run.metrics.items():
        steps = [s for s, _ in points]
        if any(b <= a for a, b in itertools.pairwise(steps)):
            problems.append(f"{key!r} is written at steps {steps}: not each once, increasing")
    got = [s for s, _ in run.metrics.get("train_loss", [])]
    if got != expected:
        problems.append(f"'train_loss' is at steps {got}, expected {expected}")
    if run.runs != 1:
        problems.append(f"the job made {run.runs} runs, expected 1")
    return problems


def check_logger(name: str, logger: Logger, rec: Recorder, folder: Path) -> dict[str, Any]:
    """Record a verdict for every logger clause (``plugin.loads`` is done)."""
    cls = type(logger)
    folder.mkdir(parents=True, exist_ok=True)

    def fresh(sub: str) -> tuple[Path, Logger]:
        where = folder / sub
        where.mkdir(parents=True, exist_ok=True)
        return where, cls.for_conformance(str(where))

    def rank_zero() -> str:
        where = folder / "rank1"
        where.mkdir(parents=True, exist_ok=True)
        before, cwd = current_rank(), os.getcwd()
        os.chdir(where)
        start = time.monotonic()
        try:
            set_rank(1)
            lg = cls.for_conformance(str(where))
            lg = pickle.loads(pickle.dumps(lg))
            _ = (lg.version, lg.name, lg.state_dict())
            lg.finalize("success")
        finally:
            set_rank(before)
            os.chdir(cwd)
        elapsed = time.monotonic() - start
        made = sorted(str(p.relative_to(where)) for p in where.rglob("*"))
        assert not made, f"rank 1 created files: {made[:5]}"
        assert elapsed < 20, f"rank 1 took {elapsed:.0f} s (it should do nothing)"
        return f"{elapsed:.2f} s"

    def fit() -> None:
        where, lg = fresh("fit")
        fit_logged(trainer(where, lg, val_check_interval=3), module())
        run = read(lg)
        problems = steps_problems(run, list(range(STEPS)))
        if "val_loss" not in run.metrics:
            problems.append(f"'val_loss' was not logged; the run holds {sorted(run.metrics)}")
        missing = [p for p in PARAMS if not any(k == p or k.startswith(p + "/")
                                                for k in run.params)]
        if missing:
            problems.append(f"hyper-parameters {missing} are missing; the run holds "
                            f"{sorted(run.params)}")
        text = " ".join(f"{k}={v}" for k, v in run.params.items())
        for reference in ("torch.nn.modules.activation.Tanh", "mse_loss"):
            if reference not in text:
                problems.append(f"the reference {reference!r} is not among the "
                                f"hyper-parameters: {text[:300]}")
        if run.status not in (None, "success"):
            problems.append(f"the run's status is {run.status!r}, expected 'success'")
        assert not problems, "; ".join(problems)

    def resume() -> None:
        where, first = fresh("resume")
        t = trainer(where, first, max_steps=3)
        fit_logged(t, module())
        ckpt = where / "half.ckpt"
        t.save_checkpoint(ckpt)
        second = cls.for_conformance(str(where))
        fit_logged(trainer(where, second), module(), ckpt_path=str(ckpt), weights_only=False)
        assert second.version == first.version, (
            f"the resumed fit logged to run {second.version!r}, not {first.version!r}")
        problems = steps_problems(read(second), list(range(STEPS)))
        assert not problems, "; ".join(problems)

    def failed_status() -> str:
        where, lg = fresh("failed")
        try:
            trainer(where, lg).fit(module(fail_at=2))
        except RuntimeError:
            pass
        else:
            raise AssertionError("the failing fit did not raise")
        run = read(lg)
        if run.status is None:
            return "the tracker keeps no status"
        assert run.status == "failed", f"the run's status is {run.status!r}, expected 'failed'"
        return ""

    rec.clause("logger.rank_zero", rank_zero)
    rec.clause("logger.fit", fit)
    rec.clause("logger.resume", resume)
    rec.clause("logger.failed_status", failed_status)
    return {}
