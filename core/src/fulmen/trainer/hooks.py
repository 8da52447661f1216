"""Calling hooks: only the ones a module or callback overrides, in a fixed order.

Order for every hook: callbacks that do not monitor metrics, then the module, then monitoring
callbacks (checkpointing, early stopping) so they see what the module logged in that hook.
The table is built once per run, so an empty hook costs one dict lookup per call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.module import Hooks, Module

HOOK_NAMES = [n for n in vars(Hooks) if n.startswith("on_")] + ["setup", "teardown"]
CALLBACK_ONLY = ["on_sanity_check_start", "on_sanity_check_end", "on_exception"]
MODULE_ONLY = ["optimizer_step", "optimizer_zero_grad", "lr_scheduler_step",
               "configure_gradient_clipping", "configure_model", "prepare_data",
               "on_validation_model_zero_grad", "on_validation_model_eval",
               "on_validation_model_train", "on_test_model_eval", "on_test_model_train",
               "on_predict_model_eval", "on_before_batch_transfer", "transfer_batch_to_device",
               "on_after_batch_transfer", "backward"]


def check_signature(obj: Any, name: str, base: type) -> None:
    """An override must accept the arguments the Trainer passes (those the base declares
    without a default, positionally); otherwise a clear error names the expected signature."""
    method = getattr(type(obj), name, None)
    expected_fn = getattr(base, name, None)
    if method is None or expected_fn is None or method is expected_fn:
        return
    expected = inspect.signature(expected_fn)
    required = [p for p in expected.parameters.values()
                if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    try:
        actual = inspect.signature(method)
    except (TypeError, ValueError):
        return  # a builtin or C method: nothing to check
    try:
        actual.bind(*[None] * len(required))
    except TypeError:
        raise ConfigurationError(
            f"{type(obj).__name__}.{name}{_plain(actual)} cannot take the arguments fulmen "
            f"passes: the hook's signature is {name}{_plain(expected)}") from None


def _plain(signature: inspect.Signature) -> str:
    """``(self, epoch, batch_idx, optimizer, optimizer_closure=None)``: names and defaults."""
    params = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _overrides(obj: Any, name: str, base: type) -> bool:
    method = getattr(type(obj), name, None)
    return method is not None and method is not getattr(base, name, None)


def _callback_overrides(callback: Callback, name: str) -> bool:
    """Overridden in the callback's class, or given to this instance (``LambdaCallback``)."""
    return name in vars(callback) or _overrides(callback, name, Callback)


class HookTable:
    """name → (is_module, callable) pairs for the hooks something overrides."""

    def __init__(self, trainer: Any, module: Module, callbacks: Sequence[Callback],
                 profiler: Any = None) -> None:
        self.trainer = trainer
        self.profiler = profiler  # None: hooks are called unwrapped
        self.calls = 0  # hook calls so far: the hang doctor's progress counter
        self.module, self.callbacks = module, list(callbacks)
        #: hook name -> its implementations; a name is here only when something implements it
        self.table: dict[str, tuple[tuple[bool, Callable[..., Any]], ...]] = {}
        self.main: dict[str, tuple[tuple[bool, Callable[..., Any]], ...]] = {}
        self.last: dict[str, tuple[tuple[bool, Callable[..., Any]], ...]] = {}
        for callback in callbacks:
            for name in HOOK_NAMES + CALLBACK_ONLY:
                check_signature(callback, name, Callback)
        for name in HOOK_NAMES + MODULE_ONLY:
            check_signature(module, name, Module)
        self._build({})

    def _build(self, unused: dict[int, frozenset[str]]) -> None:
        """The table, without each callback's ``unused`` hooks (by ``id`` of the callback)."""
        trainer, module = self.trainer, self.module
        self.table, self.main, self.last = {}, {}, {}

        def bound(group: list[Callback], name: str) -> list[tuple[bool, Callable[..., Any]]]:
            return [(False, functools.partial(getattr(c, name), trainer, module)) for c in group
                    if _callback_overrides(c, name) and name not in unused.get(id(c), ())]

        plain = [c for c in self.callbacks if not c.monitors]
        monitors = [c for c in self.callbacks if c.monitors]
        for name in HOOK_NAMES + CALLBACK_ONLY:
            calls = bound(plain, name)
            if name not in CALLBACK_ONLY and (_overrides(module, name, Hooks)
                                              or callable(vars(module).get(name))):
                calls.append((True, getattr(module, name)))
            monitoring = bound(monitors, name)
            if calls or monitoring:
                self.table[name] = tuple(calls + monitoring)
                self.main[name], self.last[name] = tuple(calls), tuple(monitoring)

    def drop_unused(self, stage: str) -> None:
        """Ask every callback which of its hooks it will not use in this run
        (:meth:`Callback.unused_hooks`, after ``setup``) and stop calling those."""
        unused: dict[int, frozenset[str]] = {}
        known = set(HOOK_NAMES + CALLBACK_ONLY)
        for callback in self.callbacks:
            names = frozenset(callback.unused_hooks(self.trainer, self.module, stage))
            if wrong := sorted(n for n in names if n not in known):
                raise ConfigurationError(
                    f"{type(callback).__name__}.unused_hooks() returned {wrong}, which are not "
                    f"callback hooks; name hooks from: {', '.join(sorted(known))}")
            if names:
                unused[id(callback)] = names
        if unused:
            self._build(unused)

    def count(self) -> int:
        """How many hooks were called (whether anything overrides them or not)."""
        return self.calls

    def has(self, name: str) -> bool:
        return name in self.table

    def __call__(self, name: str, *args: Any) -> Any:
        """Call every implementation; returns the module's result."""
        calls = self.table.get(name)
        if calls is None:  # nothing implements it (most hooks, most steps)
            self.calls += 1
            return None
        return self._run(calls, name, args)

    def before_monitors(self, name: str, *args: Any) -> Any:
        """Plain callbacks and the module only (the monitoring callbacks run later)."""
        return self._run(self.main.get(name), name, args)

    def monitors(self, name: str, *args: Any) -> Any:
        return self._run(self.last.get(name), name, args)

    def _run(self, calls: tuple[tuple[bool, Callable[..., Any]], ...] | None, name: str,
             args: tuple[Any, ...]) -> Any:
        self.calls += 1
        if not calls:
            return None
        results = self.trainer.metrics.current
        previous = results.hook if results is not None else ""
        out = None
        for is_module, fn in calls:
            if results is not None:
                results.hook = name
            if self.profiler is None:
                value = fn(*args)
            else:
                with self.profiler.profile(f"[{'Module' if is_module else 'Callback'}]{name}"):
                    value = fn(*args)
            if is_module:
                out = value
        if results is not None:
            results.hook = previous
        return out
