"""The Trainer's configuration: every constructor argument that is not a plugin choice is
checked here, once, before anything starts (:meth:`TrainerConfig.check`, with the generic checks
of :mod:`fulmen.arguments`); the default callbacks are chosen in
:mod:`fulmen.trainer.default_callbacks`. Errors echo the value, say why it cannot work and name
what would."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from fulmen import arguments, compiling, storage
from fulmen.datamodule import DataModule
from fulmen.errors import ConfigurationError, ConfigurationTypeError
from fulmen.kernel.legacy import translate_flag
from fulmen.module import Module
from fulmen.trainer.data import check_limit
from fulmen.trainer.legacy_hooks import refuse_legacy_hooks
from fulmen.utilities.rank_zero import WarningCache

if TYPE_CHECKING:
    from fulmen.trainer.loop_host import LoopHost


@dataclass(frozen=True)
class TrainerConfig:
    """The Trainer's run flags, checked, with what ``fast_dev_run`` and ``overfit_batches``
    imply applied (the Trainer takes each as an attribute of its own name)."""

    max_epochs: int
    min_epochs: int
    max_steps: int
    min_steps: int
    max_time: float | None
    limit_train_batches: int | float | None
    limit_val_batches: int | float | None
    limit_test_batches: int | float | None
    limit_predict_batches: int | float | None
    overfit_batches: int | float
    fast_dev_run: int
    val_check_interval: int | float | None
    val_check_time_interval: float | None
    check_val_every_n_epoch: int | None
    num_sanity_val_steps: int
    accumulate_grad_batches: int
    gradient_clip_val: int | float | None
    gradient_clip_algorithm: str | None
    deterministic: bool | str | None
    benchmark: bool | None
    detect_anomaly: bool
    log_every_n_steps: int
    enable_checkpointing: bool
    enable_progress_bar: bool
    enable_model_summary: bool
    logger: Any
    use_distributed_sampler: bool
    sync_batchnorm: bool
    inference_mode: bool
    enable_autolog_hparams: bool
    suggest_integrations: bool
    reload_dataloaders_every_n_epochs: int
    barebones: bool

    @classmethod
    def check(cls, *, max_epochs: int | None, min_epochs: int | None, max_steps: int,
              min_steps: int | None, max_time: Any, limit_train_batches: Any,
              limit_val_batches: Any, limit_test_batches: Any, limit_predict_batches: Any,
              overfit_batches: Any, fast_dev_run: Any, val_check_interval: Any,
              check_val_every_n_epoch: int | None, num_sanity_val_steps: int | None,
              accumulate_grad_batches: int, gradient_clip_val: Any,
              gradient_clip_algorithm: Any, deterministic: Any, benchmark: Any,
              detect_anomaly: Any, log_every_n_steps: int | None, enable_checkpointing: Any,
              enable_progress_bar: Any, enable_model_summary: Any, logger: Any,
              use_distributed_sampler: Any, replace_sampler_ddp: Any, sync_batchnorm: Any,
              inference_mode: Any, enable_autolog_hparams: Any, suggest_integrations: Any,
              default_root_dir: Any, barebones: Any, reload_dataloaders_every_n_epochs: Any,
              model_registry: Any, profiler: Any = None) -> TrainerConfig:
        """Check every flag; raise a :class:`~fulmen.errors.ConfigurationError` for the first
        that cannot work. ``None`` for ``logger``, ``enable_*``, ``log_every_n_steps`` and
        ``num_sanity_val_steps`` is Lightning's default: on (50 steps, 2 batches), or off under
        ``barebones=True``."""
        barebones = arguments.check_bool("Trainer", {"barebones": barebones})["barebones"]
        if barebones:
            check_barebones(enable_checkpointing=enable_checkpointing, logger=logger,
                            enable_progress_bar=enable_progress_bar,
                            log_every_n_steps=log_every_n_steps,
                            enable_model_summary=enable_model_summary,
                            num_sanity_val_steps=num_sanity_val_steps, fast_dev_run=fast_dev_run,
                            detect_anomaly=detect_anomaly, profiler=profiler)
            enable_checkpointing = enable_progress_bar = enable_model_summary = logger = False
            log_every_n_steps = num_sanity_val_steps = 0
        else:
            enable_checkpointing = _default(enable_checkpointing, True)
            enable_progress_bar = _default(enable_progress_bar, True)
            enable_model_summary = _default(enable_model_summary, True)
            logger = _default(logger, True)
            log_every_n_steps = _default(log_every_n_steps, 50)
            num_sanity_val_steps = _default(num_sanity_val_steps, 2)
        flags = arguments.check_bool("Trainer", {
            "benchmark": benchmark, "deterministic": deterministic, "detect_anomaly":
            detect_anomaly, "sync_batchnorm": sync_batchnorm, "enable_checkpointing":
            enable_checkpointing, "enable_progress_bar": enable_progress_bar,
            "enable_model_summary": enable_model_summary, "use_distributed_sampler":
            use_distributed_sampler, "inference_mode": inference_mode, "enable_autolog_hparams":
            enable_autolog_hparams, "suggest_integrations": suggest_integrations,
            "replace_sampler_ddp": replace_sampler_ddp},
            optional=("benchmark", "deterministic", "replace_sampler_ddp"),
            also={"deterministic": ("warn",)})
        benchmark, deterministic = flags["benchmark"], flags["deterministic"]
        detect_anomaly, sync_batchnorm = flags["detect_anomaly"], flags["sync_batchnorm"]
        enable_checkpointing = flags["enable_checkpointing"]
        enable_progress_bar = flags["enable_progress_bar"]
        enable_model_summary = flags["enable_model_summary"]
        use_distributed_sampler = flags["use_distributed_sampler"]
        inference_mode, replace_sampler_ddp = flags["inference_mode"], flags["replace_sampler_ddp"]
        enable_autolog_hparams = flags["enable_autolog_hparams"]
        suggest_integrations = flags["suggest_integrations"]
        gradient_clip_val = check_clip_value(gradient_clip_val)
        val_check_time = None
        if isinstance(val_check_interval, str | dict | timedelta):  # Lightning 2.6: a duration
            val_check_time = parse_max_time(val_check_interval, "val_check_interval")
            val_check_interval = None
        arguments.check_number("Trainer", "val_check_interval", val_check_interval)
        # "": the working directory, as Lightning
        arguments.check_path("Trainer", "default_root_dir", default_root_dir or None)
        max_epochs = check_int("max_epochs", max_epochs, minimum=-1, optional=True)
        min_epochs = check_int("min_epochs", min_epochs, minimum=0, optional=True, floor=0)
        if min_epochs is not None and max_epochs not in (None, -1) and min_epochs > max_epochs:
            _LENIENT.warn(f"Trainer(min_epochs={min_epochs}, max_epochs={max_epochs}): "
                          "min_epochs exceeds max_epochs, so training stops at max_epochs (as "
                          "Lightning does); raise max_epochs or lower min_epochs",
                          category=UserWarning)
        max_steps = check_int("max_steps", max_steps, minimum=-1)
        min_steps = check_int("min_steps", min_steps, minimum=0, optional=True, floor=0)
        warn_unsupported(model_registry=model_registry)
        check_reload(reload_dataloaders_every_n_epochs)
        accumulate_grad_batches = check_int("accumulate_grad_batches", accumulate_grad_batches,
                                            minimum=1)
        # Lightning: a negative log_every_n_steps logs at every step (n % -k == 0)
        log_every_n_steps = check_int("log_every_n_steps", log_every_n_steps, minimum=0,
                                      floor=log_every_n_steps)
        num_sanity_val_steps = check_int("num_sanity_val_steps", num_sanity_val_steps,
                                         minimum=-1, floor=0)
        check_val_every_n_epoch = check_int("check_val_every_n_epoch", check_val_every_n_epoch,
                                            minimum=1, optional=True)
        check_clipping_algorithm(gradient_clip_algorithm)
        check_val_check_interval(val_check_interval)
        if isinstance(val_check_interval, float) and check_val_every_n_epoch is None:
            raise ConfigurationError(  # Lightning's words
                f"Trainer(val_check_interval={val_check_interval!r}, check_val_every_n_epoch="
                "None): `val_check_interval` should be an integer or a time-based duration (str "
                "'DD:HH:MM:SS', datetime.timedelta, or dict kwargs for timedelta) when "
                "`check_val_every_n_epoch=None`.")
        fast_dev_run = check_fast_dev_run(fast_dev_run)
        limits = {kind: check_limit(f"limit_{kind}_batches", value) for kind, value in (
            ("train", limit_train_batches), ("val", limit_val_batches),
            ("test", limit_test_batches), ("predict", limit_predict_batches))}
        overfit = check_limit("overfit_batches", overfit_batches) or 0.0
        if overfit:  # Lightning: that many train and val batches, no shuffling
            limits["train"] = limits["val"] = overfit
        if fast_dev_run:  # Lightning's _init_debugging_flags
            limits = {kind: limit if overfit and kind in ("train", "val") else fast_dev_run
                      for kind, limit in limits.items()}
            max_epochs, max_steps, num_sanity_val_steps, val_check_interval = \
                1, fast_dev_run, 0, None
            val_check_time, check_val_every_n_epoch = None, 1
            # Lightning keeps the checkpoint callbacks (they save nothing under fast_dev_run)
            # and puts a DummyLogger in place of the loggers (none when none was configured)
            logger = _dummy_logger(logger)
        if max_epochs is None and max_steps == -1:
            max_epochs = 1000
        return cls(
            max_epochs=-1 if max_epochs is None else max_epochs, min_epochs=min_epochs or 0,
            max_steps=max_steps, min_steps=min_steps or 0, max_time=parse_max_time(max_time),
            limit_train_batches=limits["train"], limit_val_batches=limits["val"],
            limit_test_batches=limits["test"], limit_predict_batches=limits["predict"],
            overfit_batches=overfit, fast_dev_run=fast_dev_run,
            val_check_interval=val_check_interval, val_check_time_interval=val_check_time,
            check_val_every_n_epoch=check_val_every_n_epoch,
            num_sanity_val_steps=num_sanity_val_steps,
            accumulate_grad_batches=accumulate_grad_batches,
            gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm,
            deterministic=deterministic, benchmark=benchmark, detect_anomaly=detect_anomaly,
            log_every_n_steps=log_every_n_steps, enable_checkpointing=enable_checkpointing,
            enable_progress_bar=enable_progress_bar, enable_model_summary=enable_model_summary,
            logger=logger,
            use_distributed_sampler=translate_flag(
                "Trainer", "replace_sampler_ddp", "use_distributed_sampler",
                replace_sampler_ddp, use_distributed_sampler, True),
            sync_batchnorm=sync_batchnorm, inference_mode=inference_mode,
            enable_autolog_hparams=enable_autolog_hparams,
            suggest_integrations=suggest_integrations,
            reload_dataloaders_every_n_epochs=int(reload_dataloaders_every_n_epochs),
            barebones=barebones)


def check_clipping_algorithm(gradient_clip_algorithm: Any) -> None:
    if gradient_clip_algorithm not in (None, "norm", "value"):
        raise ConfigurationError(f"Trainer(gradient_clip_algorithm="
                                 f"{gradient_clip_algorithm!r}): use 'norm' or 'value'")


def check_val_check_interval(value: Any) -> None:
    """A number already (``arguments.check_number``): in range."""
    if value is not None and (value <= 0 or (isinstance(value, float) and value > 1.0)):
        raise ConfigurationError(f"Trainer(val_check_interval={value!r}): give a "
                                 "number of training batches (int > 0) or a fraction of the "
                                 "epoch (float in (0, 1])")


_INSTEAD = {
    "model_registry": "trainer.save_checkpoint(path) and upload the file",
}

#: what ``barebones=True`` turns off, and why (Lightning's words)
_BAREBONES = {
    "enable_checkpointing": "Checkpointing can impact raw speed so it is disabled in barebones "
                            "mode.",
    "logger": "Logging can impact raw speed so it is disabled in barebones mode.",
    "enable_progress_bar": "The progress bar can impact raw speed so it is disabled in "
                           "barebones mode.",
    "log_every_n_steps": "Logging can impact raw speed so it is disabled in barebones mode.",
    "enable_model_summary": "Model summary can impact raw speed so it is disabled in "
                            "barebones mode.",
    "num_sanity_val_steps": "Sanity checking can impact raw speed so it is disabled in "
                            "barebones mode.",
    "fast_dev_run": "Development run is not meant for raw speed evaluation so it is disabled "
                    "in barebones mode.",
    "detect_anomaly": "Anomaly detection can impact raw speed so it is disabled in barebones "
                      "mode.",
    "profiler": "Profiling can impact raw speed so it is disabled in barebones mode.",
}

BAREBONES_INFO = (
    "You are running in `Trainer(barebones=True)` mode. All features that may impact raw speed "
    "have been disabled to facilitate analyzing the Trainer overhead. Specifically, the "
    "following features are deactivated:" + "".join(f"{os.linesep} - {line}" for line in (
        "Checkpointing: `Trainer(enable_checkpointing=True)`",
        "Progress bar: `Trainer(enable_progress_bar=True)`",
        "Model summary: `Trainer(enable_model_summary=True)`",
        "Logging: `Trainer(logger=True)`, `Trainer(log_every_n_steps>0)`, `Module.log(...)`, "
        "`Module.log_dict(...)`",
        "Sanity checking: `Trainer(num_sanity_val_steps>0)`",
        "Development run: `Trainer(fast_dev_run=True)`",
        "Anomaly detection: `Trainer(detect_anomaly=True)`",
        "Profiling: `Trainer(profiler=...)`")))


def _dummy_logger(logger: Any) -> Any:
    """What ``fast_dev_run`` logs to: a ``DummyLogger`` when loggers were configured (so code
    that uses ``trainer.logger`` runs), else none (Lightning's rule)."""
    if logger is False or logger is None or (isinstance(logger, list | tuple) and not logger):
        return False
    from fulmen.loggers.dummy import DummyLogger

    return DummyLogger()


def _default(value: Any, default: Any) -> Any:
    return default if value is None else value


def check_barebones(**given: Any) -> None:
    """``barebones=True`` with a feature it turns off asked for: Lightning's ``ValueError``
    (a :class:`~fulmen.errors.ConfigurationError` is one)."""
    for flag, value in given.items():
        if flag in ("logger", "profiler"):
            conflict = value is not None and value is not False
        elif flag in ("log_every_n_steps", "num_sanity_val_steps", "fast_dev_run"):
            conflict = value is not None and value is not False and value != 0
        else:
            conflict = bool(value)
        if conflict:
            raise ConfigurationError(f"`Trainer(barebones=True, {flag}={value!r})` was passed. "
                                     f"{_BAREBONES[flag]} Leave {flag} out, or drop "
                                     "barebones=True")


def check_reload(value: Any) -> None:
    """``reload_dataloaders_every_n_epochs``: an int >= 0 (a bool is one, as in Lightning)."""
    if not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"Trainer(reload_dataloaders_every_n_epochs={value!r}): "
                                 f"`reload_dataloaders_every_n_epochs` should be an int >= 0, "
                                 f"got {value!r} (0: request the dataloaders once; n: request "
                                 "them again every n epochs)")


def root_dir(given: str | os.PathLike[str] | None) -> str:
    """``default_root_dir`` as kept: the working directory when not given, a URL without its
    trailing ``/``, a local path as given (``~`` expanded)."""
    if given is None or given == "":
        return os.getcwd()
    storage.check(given, "Trainer(default_root_dir=...)")
    given = storage.local(os.fspath(given))
    return str(given).rstrip("/") if storage.is_url(given) else \
        os.path.normpath(os.path.expanduser(given))


def warn_unsupported(**given: Any) -> None:
    """Lightning arguments fulmen does not implement: ignored with a warning unless left at the
    default (Lightning runs without them too when their package is missing)."""
    defaults = {"model_registry": None}
    for flag, value in given.items():
        if value != defaults[flag]:
            _LENIENT.warn(f"Trainer({flag}={value!r}) is not implemented in fulmen and is "
                          f"ignored; use {_INSTEAD[flag]}", category=UserWarning)


_LENIENT = WarningCache()


def check_int(flag: str, value: Any, minimum: int, optional: bool = False,
              floor: Any = None) -> Any:
    """``value`` as an int >= ``minimum``. Lightning runs some values fulmen would refuse, so
    they are taken with a warning: a whole float (``2.0``) as its int, and, where ``floor`` is
    given, a value below ``minimum`` as ``floor`` (what Lightning's loops make of it)."""
    if value is None and optional:
        return value
    extra = ", -1 for no limit" if minimum == -1 else ""
    expected = f"an int >= {max(minimum, 0)}{extra}" + (" or None" if optional else "")
    if isinstance(value, float) and value.is_integer():
        _LENIENT.warn(f"Trainer({flag}={value!r}): expected {expected}; taken as "
                      f"{int(value)}, as Lightning does. Pass {int(value)}", category=UserWarning)
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"Trainer({flag}={value!r}): expected {expected}")
    if value < minimum:
        if floor is None:
            raise ConfigurationError(f"Trainer({flag}={value!r}): expected {expected}")
        _LENIENT.warn(f"Trainer({flag}={value!r}): expected {expected}; Lightning runs it as "
                      f"{flag}={floor!r}, and so does fulmen. Pass {max(minimum, 0)}",
                      category=UserWarning)
        value = floor
    return value


def check_clip_value(value: Any) -> Any:
    """``gradient_clip_val``: a finite number or None. A bool (a number to Lightning) and a
    negative value (which Lightning hands to torch's clipping, flipping or zeroing gradients)
    are taken as they are, with a warning."""
    if isinstance(value, bool) or (isinstance(value, int | float) and value < 0):
        _LENIENT.warn(f"Trainer(gradient_clip_val={value!r}): expected a finite number >= 0 or "
                      f"None; Lightning clips with {float(value)!r}, and so does fulmen. Pass a "
                      "value >= 0 (None: no clipping)", category=UserWarning)
        return float(value)
    arguments.check_number("Trainer", "gradient_clip_val", value, minimum=0)
    return value


def check_fast_dev_run(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value >= 0:
        return value
    raise ConfigurationError(f"Trainer(fast_dev_run={value!r}): use True, False or a number of "
                             "batches")


def parse_max_time(value: Any, flag: str = "max_time") -> float | None:
    """A duration in seconds: ``"DD:HH:MM:SS"``, a timedelta or timedelta's keywords."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        if value.total_seconds() <= 0:
            raise ConfigurationError(f"Trainer({flag}={value!r}): a time limit must be "
                                     "positive")
        return value.total_seconds()
    if isinstance(value, dict):
        try:
            seconds = timedelta(**value).total_seconds()
        except TypeError as exc:
            raise ConfigurationError(f"Trainer({flag}={value!r}): {exc}; the keys are "
                                     "datetime.timedelta's: days, hours, minutes, seconds, "
                                     "weeks") from None
        if seconds <= 0:
            raise ConfigurationError(f"Trainer({flag}={value!r}): a time limit must be "
                                     "positive")
        return seconds
    if isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 4 and all(p.isdigit() for p in parts):
            days, hours, minutes, seconds = map(int, parts)
            total = timedelta(days=days, hours=hours, minutes=minutes,
                              seconds=seconds).total_seconds()
            if total <= 0:
                raise ConfigurationError(f"Trainer({flag}={value!r}): a time limit must be "
                                         "positive (None for no limit)")
            return total
    raise ConfigurationError(f"Trainer({flag}={value!r}): use 'DD:HH:MM:SS', a "
                             "datetime.timedelta or a dict like {'hours': 2}")


def as_list(value: Any, kind: type, flag: str) -> list[Any]:
    """``value`` as a list of ``kind``: None, one object, or any iterable of them (a list, a
    tuple, a generator, Hydra's ``ListConfig``), each item checked."""
    if value is None:
        return []
    items = [value] if isinstance(value, kind | str | bytes | Mapping) or \
        not isinstance(value, Iterable) else list(value)
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


def check_call(trainer: LoopHost, model: Any, datamodule: Any, stage: str, *loaders: Any
               ) -> Module:
    """The model and data given to ``trainer.<stage>()``, checked (a compiled model is
    unwrapped, its compile options kept for the trainer)."""
    if model is None:
        raise ConfigurationTypeError(f"trainer.{stage}() needs a model: pass a fulmen.Module")
    model, compiled = compiling.unwrap(model)  # torch.compile(model): compiled after set-up
    if compiled is not None and trainer.compile_options is None:
        trainer.compile_options = compiled
    if not isinstance(model, Module):
        raise ConfigurationTypeError(f"trainer.{stage}(model=...) got a {type(model).__name__}; "
                                     "it takes a fulmen.Module (subclass fulmen.Module, or use "
                                     "fulmen.Lite for a plain torch.nn.Module)")
    if datamodule is not None and not isinstance(datamodule, DataModule):
        raise ConfigurationError(f"trainer.{stage}(datamodule=...) got a "
                                 f"{type(datamodule).__name__}; it takes a fulmen.DataModule")
    if datamodule is not None and any(x is not None for x in loaders):
        raise ConfigurationError(f"trainer.{stage}() got both dataloaders and a datamodule; "
                                 "pass one of them")
    refuse_legacy_hooks(model, stage)
    return model
