"""The Trainer's configuration checks: every constructor argument is validated here (with
:mod:`fulmen.arguments`) before anything starts, and the default callbacks are chosen. Errors echo
the value, say why it cannot work and name what would."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from fulmen import storage
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError


def check_clipping(gradient_clip_val: Any, gradient_clip_algorithm: Any) -> None:
    if gradient_clip_algorithm not in (None, "norm", "value"):
        raise ConfigurationError(f"Trainer(gradient_clip_algorithm="
                                 f"{gradient_clip_algorithm!r}): use 'norm' or 'value'")
    if gradient_clip_val is not None and (isinstance(gradient_clip_val, bool) or not
                                          isinstance(gradient_clip_val, int | float)
                                          or gradient_clip_val < 0):
        raise ConfigurationError(f"Trainer(gradient_clip_val={gradient_clip_val!r}): expected"
                                 " a number >= 0")


def check_val_check_interval(value: Any) -> None:
    if value is not None and (isinstance(value, bool) or value <= 0
                              or (isinstance(value, float) and value > 1.0)):
        raise ConfigurationError(f"Trainer(val_check_interval={value!r}): give a "
                                 "number of training batches (int > 0) or a fraction of the "
                                 "epoch (float in (0, 1])")


_INSTEAD = {
    "barebones": "enable_checkpointing=False, logger=False, enable_progress_bar=False, "
                 "enable_model_summary=False",
    "reload_dataloaders_every_n_epochs": "a dataloader whose dataset changes itself in "
                                         "on_train_epoch_start",
    "model_registry": "trainer.save_checkpoint(path) and upload the file",
}


def root_dir(given: str | os.PathLike[str] | None) -> str:
    """``default_root_dir`` as kept: the working directory when not given, a URL without its
    trailing ``/``, a local path as given (``~`` expanded)."""
    if given is None or given == "":
        return os.getcwd()
    storage.check(given, "Trainer(default_root_dir=...)")
    given = storage.local(os.fspath(given))
    return str(given).rstrip("/") if storage.is_url(given) else \
        os.path.normpath(os.path.expanduser(given))


def refuse_unsupported(**given: Any) -> None:
    """Lightning arguments fulmen does not implement: refused unless left at the default."""
    defaults = {"barebones": False, "reload_dataloaders_every_n_epochs": 0,
                "model_registry": None}
    for flag, value in given.items():
        if value != defaults[flag]:
            raise ConfigurationError(f"Trainer({flag}={value!r}) is not implemented in fulmen; "
                                     f"use {_INSTEAD[flag]}")


def check_int(flag: str, value: Any, minimum: int, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        extra = ", -1 for no limit" if minimum == -1 else ""
        raise ConfigurationError(f"Trainer({flag}={value!r}): expected an int >= "
                                 f"{max(minimum, 0)}{extra}" + (" or None" if optional else ""))


def check_fast_dev_run(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value >= 0:
        return value
    raise ConfigurationError(f"Trainer(fast_dev_run={value!r}): use True, False or a number of "
                             "batches")


def parse_max_time(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        if value.total_seconds() <= 0:
            raise ConfigurationError(f"Trainer(max_time={value!r}): a time limit must be "
                                     "positive")
        return value.total_seconds()
    if isinstance(value, dict):
        try:
            seconds = timedelta(**value).total_seconds()
        except TypeError as exc:
            raise ConfigurationError(f"Trainer(max_time={value!r}): {exc}; the keys are "
                                     "datetime.timedelta's: days, hours, minutes, seconds, "
                                     "weeks") from None
        if seconds <= 0:
            raise ConfigurationError(f"Trainer(max_time={value!r}): a time limit must be "
                                     "positive")
        return seconds
    if isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 4 and all(p.isdigit() for p in parts):
            days, hours, minutes, seconds = map(int, parts)
            total = timedelta(days=days, hours=hours, minutes=minutes,
                              seconds=seconds).total_seconds()
            if total <= 0:
                raise ConfigurationError(f"Trainer(max_time={value!r}): a time limit must be "
                                         "positive (None for no limit)")
            return total
    raise ConfigurationError(f"Trainer(max_time={value!r}): use 'DD:HH:MM:SS', a "
                             "datetime.timedelta or a dict like {'hours': 2}")


def as_list(value: Any, kind: type, flag: str) -> list[Any]:
    if value is None:
        return []
    items = list(value) if isinstance(value, list | tuple) else [value]
    for item in items:
        if isinstance(item, type):
            raise ConfigurationError(
                f"{flag} got the class {item.__module__}.{item.__qualname__}, not an instance "
                f"of it: pass an instance, {item.__name__}() (with its arguments), as in "
                f"{flag.removesuffix('()')}=[{item.__name__}()]")
        if not isinstance(item, kind):
            raise ConfigurationError(f"{flag} got a {type(item).__name__}; it takes "
                                     f"{kind.__module__.split('.')[0]}.{kind.__name__} objects")
    return items


def default_callbacks(callbacks: list[Callback], checkpointing: bool, progress: bool,
                       summary: bool) -> list[Callback]:
    """``callbacks`` plus the defaults the flags ask for and ``callbacks`` lacks (only the
    callback modules in use are imported)."""
    from fulmen.callbacks.checkpoint import ModelCheckpoint
    from fulmen.callbacks.progress import ProgressBar
    from fulmen.callbacks.summary import ModelSummary, RichModelSummary

    bars = [c for c in callbacks if isinstance(c, ProgressBar)]
    if len(bars) > 1:
        raise ConfigurationError(f"You added multiple progress bar callbacks to the Trainer "
                                 f"({', '.join(type(c).__name__ for c in bars)}); keep one of "
                                 "them")
    if bars and not progress:
        raise ConfigurationError(f"Trainer was configured with `enable_progress_bar=False` but "
                                 f"found `{type(bars[0]).__name__}` in callbacks list; drop one "
                                 "of them")
    has_checkpoint = any(isinstance(c, ModelCheckpoint) for c in callbacks)
    if has_checkpoint and not checkpointing:
        raise ConfigurationError("Trainer(enable_checkpointing=False) was given a "
                                 "ModelCheckpoint callback; drop one of them")
    extra: list[Callback] = []
    if summary and not any(isinstance(c, ModelSummary) for c in callbacks):
        rich = False  # rich bars get the rich table, as in Lightning
        if bars:
            from fulmen.callbacks.rich_progress import RichProgressBar

            rich = isinstance(bars[0], RichProgressBar)
        extra.append(RichModelSummary() if rich else ModelSummary())
    if progress and not bars:
        from fulmen.callbacks.tqdm_progress import TQDMProgressBar

        extra.append(TQDMProgressBar())
    if checkpointing and not has_checkpoint:
        extra.append(ModelCheckpoint())
    return callbacks + extra


def merge_callbacks(existing: list[Callback], from_model: list[Callback]) -> list[Callback]:
    """Callbacks from ``configure_callbacks`` replace the Trainer's of the same type."""
    if not from_model:
        return existing
    kinds = {type(c) for c in from_model}
    return [c for c in existing if type(c) not in kinds] + from_model

