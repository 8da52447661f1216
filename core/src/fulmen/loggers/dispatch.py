"""``LoggerSet``: the one place the Trainer and Lite call loggers, and the owner of the logger
contract's run-time rules (docs/plugin-contracts.md, "Loggers"):

* only global rank zero calls a logger; the other ranks return at once (nothing to wait for);
* values queued at one step merge into one ``log_metrics`` call (what a callback logs at a
  step goes with the step's own values; the last value of a name wins); the Trainer flushes
  after each batch's and each epoch's values, so nothing waits for a later step;
* on the training axis, a name is never written twice at a step nor at an earlier one: a fit
  resumed from a checkpoint goes on from the checkpoint's steps (kept in the checkpoint);
* hyper-parameters go to each logger once per run, as plain data (modules and partials as
  ``class_path``/``init_args``, other objects as ``module:name`` or their repr);
* ``finalize`` is called once per stage with its status;
* a logger that raises is reported once (a ``LoggerWarning`` naming it and the cause) and left
  out for the rest of the run, and training goes on; a logger whose ``raise_on_error`` is True
  stops training instead.

Nothing here starts a collective or reads a device tensor: values arrive as Python floats.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fulmen.api.logger import STATUSES, Logger
from fulmen.errors import ConfigurationError, LoggerWarning

STATE_KEY = "loggers"


class LoggerSet:
    """A list of loggers and the rules above. ``rank`` gives the global rank at each call."""

    def __init__(self, loggers: Iterable[Logger], rank: Callable[[], int],
                 buffered: bool = True) -> None:
        self.loggers: list[Logger] = list(loggers)
        self._rank = rank
        self.buffered = buffered  # False (Lite): each call goes out at once
        self.failures: dict[int, str] = {}  # id(logger) -> what failed first
        self.dropped = 0  # calls not made because their logger had failed (reported once)
        self._pending: dict[str, float] = {}
        self._pending_step: int | None = None
        self._pending_train = False
        #: name -> the last training-axis step it was written at (kept in checkpoints)
        self.last_steps: dict[str, int] = {}
        #: id(logger) -> name -> the last step its tracker held when the run was continued
        self.floors: dict[int, dict[str, int]] = {}
        self.hparams_logged = 0  # how many times hyper-parameters went out in this run
        self.finalized = 0

    # ------------------------------------------------------------------ calling loggers

    def _call(self, logger: Logger, what: str, call: Callable[[], Any]) -> None:
        if id(logger) in self.failures:
            self.dropped += 1
            return
        try:
            call()
        except Exception as exc:
            if logger.raise_on_error:
                raise
            self.failures[id(logger)] = f"{what}: {type(exc).__name__}: {exc}"
            warnings.warn(
                f"logger {describe(logger)} failed in {what}: {type(exc).__name__}: {exc}. "
                "It is left out for the rest of this run and training goes on (set the "
                "logger's raise_on_error=True to stop training instead).",
                LoggerWarning, stacklevel=4)

    def _each(self, what: str, call: Callable[[Logger], Any]) -> None:
        if not self.loggers or self._rank() != 0:
            return
        for logger in self.loggers:
            self._call(logger, what, functools.partial(call, logger))

    # ------------------------------------------------------------------ metrics

    def log_metrics(self, metrics: Mapping[str, float], step: int, training_axis: bool = True
                    ) -> None:
        """Queue ``metrics`` at ``step``; values of the pending step merge, another step sends
        the pending one first. ``training_axis``: the step is the training step counter, on
        which names never go back (evaluation batches count on their own axis)."""
        if not self.loggers or self._rank() != 0:
            return
        if self._pending and (step != self._pending_step or training_axis != self._pending_train):
            self.flush()
        self._pending.update(metrics)
        self._pending_step, self._pending_train = step, training_axis
        if not self.buffered:
            self.flush()

    def flush(self) -> None:
        """Send the pending step's values."""
        if not self._pending or self._pending_step is None:
            return
        values, step, train = self._pending, self._pending_step, self._pending_train
        self._pending, self._pending_step = {}, None
        if train:
            values = {k: v for k, v in values.items() if self.last_steps.get(k, -1) < step}
            for key in values:
                self.last_steps[key] = step
        if not values or self._rank() != 0:
            return
        for logger in self.loggers:
            floor = self.floors.get(id(logger)) if train else None
            mine = {k: v for k, v in values.items() if floor.get(k, -1) < step} if floor \
                else values
            if mine:
                self._call(logger, "log_metrics", functools.partial(logger.log_metrics, mine, step))

    # ------------------------------------------------------------------ the run

    def log_hyperparams(self, params: Mapping[str, Any]) -> None:
        """Hyper-parameters, once per run (a resumed fit has logged them already)."""
        if self.hparams_logged or not self.loggers or self._rank() != 0:
            return
        plain = plain_params(dict(params))
        self._each("log_hyperparams", lambda lg: lg.log_hyperparams(plain))
        self.hparams_logged += 1

    def log_graph(self, model: Any) -> None:
        self._each("log_graph", lambda lg: lg.log_graph(model))

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        self.flush()
        self._each("after_save_checkpoint",
                   lambda lg: lg.after_save_checkpoint(checkpoint_callback))

    def save(self) -> None:
        self.flush()
        self._each("save", lambda lg: lg.save())

    def finalize(self, status: str) -> None:
        """The stage ended: flush, then each logger's ``finalize(status)``, once."""
        if status not in STATUSES:
            raise ConfigurationError(f"finalize(status={status!r}): use one of {STATUSES}")
        self.flush()
        self._each("finalize", lambda lg: lg.finalize(status))
        self.finalized += 1

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps: each logger's run identity (by position and class) and the
        steps already written."""
        self.flush()
        return {"loggers": [{"class": type(lg).__qualname__, "state": lg.state_dict()}
                            for lg in self.loggers],
                "last_steps": dict(self.last_steps), "hparams_logged": self.hparams_logged}

    def load_state_dict(self, state: Mapping[str, Any], ask_trackers: bool = True) -> None:
        """Continue the runs ``state`` names (a logger of another class at that position, as
        when the user changed loggers, starts its own run). ``ask_trackers``: also ask each
        logger which steps its tracker holds past the checkpoint (a resume); False when the
        state comes from this job's own spawned rank zero."""
        saved = list(state.get("loggers", []))
        for logger, entry in zip(self.loggers, saved):
            if entry.get("class") == type(logger).__qualname__:
                logger.load_state_dict(entry.get("state", {}))
                if ask_trackers and self._rank() == 0:  # what the tracker holds past it
                    self._call(logger, "logged_steps", functools.partial(self._floor, logger))
        self.last_steps.update(state.get("last_steps", {}))
        self.hparams_logged = int(state.get("hparams_logged", 0))


    def _floor(self, logger: Logger) -> None:
        floor = {str(k): int(v) for k, v in logger.logged_steps().items()}
        if floor:
            self.floors[id(logger)] = floor


def describe(logger: Logger) -> str:
    return f"{type(logger).__module__}.{type(logger).__qualname__}"


def plain_params(params: dict[str, Any]) -> dict[str, Any]:
    """Hyper-parameters as plain data: containers kept, modules and partials as
    ``class_path``/``init_args``, functions and classes as ``module:qualname``, other objects
    as their repr."""
    import types

    from fulmen.loggers.csv import _plain

    named = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)

    def reference(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): reference(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [reference(v) for v in value]
        if isinstance(value, types.BuiltinFunctionType):  # torch.relu: no usable qualname
            return f"{value.__module__}:{value.__name__}"
        if isinstance(value, named):
            return f"{value.__module__}:{value.__qualname__}"
        return value

    return dict(_plain(reference(params)))
