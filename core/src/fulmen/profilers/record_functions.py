"""Two pieces of Lightning's ``PyTorchProfiler`` for code that drives ``torch.profiler`` itself:
``RegisterRecordFunction`` labels each submodule's forward in the trace, and
``ScheduleWrapper`` applies a ``torch.profiler.schedule`` to training, validation, test and
predict steps counted apart."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerAction

__all__ = ["RegisterRecordFunction", "ScheduleWrapper"]


class RegisterRecordFunction:
    """``with RegisterRecordFunction(model): model(batch)``: each submodule's forward is a
    ``record_function`` named ``[pl][module]<class path>: <name>`` in the profile."""

    def __init__(self, model: torch.nn.Module) -> None:
        self._model = model
        self._records: dict[str, Any] = {}
        self._handles: dict[str, list[Any]] = {}

    def _start(self, _: torch.nn.Module, inputs: Any, record_name: str) -> Any:
        record = record_function("[pl][module]" + record_name)
        record.__enter__()
        self._records[record_name] = record
        return inputs

    def _stop(self, _: torch.nn.Module, __: Any, output: Any, record_name: str) -> Any:
        self._records[record_name].__exit__(None, None, None)
        return output

    def __enter__(self) -> None:
        for name, module in self._model.named_modules():
            if name:
                record_name = f"{type(module).__module__}.{type(module).__name__}: {name}"
                self._handles[name] = [
                    module.register_forward_pre_hook(partial(self._start, record_name=record_name)),
                    module.register_forward_hook(partial(self._stop, record_name=record_name))]

    def __exit__(self, *args: Any) -> None:
        for handles in self._handles.values():
            for handle in handles:
                handle.remove()
        self._handles = {}


_KINDS = ("training_step", "validation_step", "test_step", "predict_step")


class ScheduleWrapper:
    """A ``torch.profiler`` schedule that counts each kind of step apart (the profiled action
    named by :meth:`pre_step`) and stops recording a kind once its schedule saved a trace."""

    def __init__(self, schedule: Callable[[int], ProfilerAction]) -> None:
        self._schedule = schedule
        self.reset()

    def reset(self) -> None:
        self._steps = dict.fromkeys(_KINDS, 0)
        self._finished = dict.fromkeys(_KINDS, False)
        self._current_action: str | None = None
        self._prev_schedule_action: ProfilerAction | None = None
        self._start_action_name: str | None = None

    def setup(self, start_action_name: str) -> None:
        self._start_action_name = start_action_name

    def pre_step(self, current_action: str) -> None:
        self._current_action = current_action

    def _kind(self) -> str | None:
        assert self._current_action is not None
        return next((k for k in _KINDS if self._current_action.endswith(k)), None)

    @property
    def is_training(self) -> bool:
        return self._kind() == "training_step"

    @property
    def is_validating(self) -> bool:
        return self._kind() == "validation_step"

    @property
    def is_testing(self) -> bool:
        return self._kind() == "test_step"

    @property
    def is_predicting(self) -> bool:
        return self._kind() == "predict_step"

    @property
    def num_step(self) -> int:
        kind = self._kind()
        return self._steps[kind] if kind else 0

    @property
    def has_finished(self) -> bool:
        kind = self._kind()
        return self._finished[kind] if kind else False

    def _step(self) -> None:
        kind = self._kind()
        if kind == "validation_step" and (self._start_action_name or "").endswith("on_fit_start"):
            if self._steps["training_step"] > 0:  # the sanity check is not counted
                self._steps[kind] += 1
        elif kind is not None:
            self._steps[kind] += 1

    def __call__(self, num_step: int) -> ProfilerAction:
        if self._current_action is None or self.has_finished:
            return ProfilerAction.NONE
        self._step()
        action = self._schedule(max(self.num_step, 0))
        if self._prev_schedule_action == ProfilerAction.RECORD and \
                action == ProfilerAction.WARMUP:
            action = ProfilerAction.RECORD  # validation started before training recorded
        kind = self._kind()
        if action == ProfilerAction.RECORD_AND_SAVE and kind is not None:
            self._finished[kind] = True
        self._prev_schedule_action = action
        return action
