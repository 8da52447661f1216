"""``Lite``: scale a raw PyTorch loop with the same plugins and composition as the Trainer.

Five changes to a plain loop: subclass ``Lite`` and move the loop into ``run``; drop
``.to(device)`` calls; ``model, optimizer = self.setup(model, optimizer)``;
``loader = self.setup_dataloaders(loader)``; ``self.backward(loss)`` instead of
``loss.backward()``. Then ``MyLite(strategy="ddp", devices=2, precision="bf16-mixed").run()``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from fulmen import arguments, compiling, hang, quick_exit, storage
from fulmen.api.async_checkpoint_io import AsyncCheckpointIO
from fulmen.api.logger import FAILED, INTERRUPTED, SUCCESS
from fulmen.apply import apply_to_tensors
from fulmen.checkpoint import service
from fulmen.errors import CallOrderError, ConfigurationError, ConfigurationTypeError, FulmenError
from fulmen.fault_tolerance.lost_work import KEY
from fulmen.kernel.legacy import translate_flag
from fulmen.kernel.selection import SelectionReport, select
from fulmen.lite_preemption import LitePreemption
from fulmen.lite_wrappers import EmptyInit, LiteDataLoader, LiteModule, LiteOptimizer
from fulmen.loggers import resolve_loggers
from fulmen.loggers.dispatch import LoggerSet
from fulmen.module import Module
from fulmen.utilities.rank_zero import rank_zero_warn, set_rank


def _original_run(lite: Lite, *args: Any, **kwargs: Any) -> Any:
    """The subclass's own ``run`` (picklable by reference, for spawned workers)."""
    return type(lite).run.__wrapped__(lite, *args, **kwargs)  # type: ignore[attr-defined]


def _global_rank(lite: Lite) -> int:
    """The logger set's rank (a module-level function: spawned workers unpickle the Lite)."""
    return lite.global_rank


def _loggers_of(lite: Lite) -> list[Any]:
    """The Lite's loggers (a module-level function: the Lite may be pickled)."""
    return lite.loggers


def _do_nothing(lite: Lite) -> None:
    """What ``launch()`` without a function runs in each process."""


def _NO_FUNCTION(lite: Lite) -> None:
    """``launch()``'s default: no function was given."""


def _apply_filter(state: dict[str, Any], filter: Any) -> dict[str, Any]:
    """Keep the items ``filter[key](name, value)`` accepts in each dict entry of ``state``;
    an entry left empty is dropped, entries without a filter are kept whole."""
    if not isinstance(filter, dict):
        raise ConfigurationTypeError(f"lite.save(filter={filter!r}): the filter should be a "
                                     "dict of state key -> function (name, value) -> bool")
    unknown = set(filter) - set(state)
    if unknown:
        raise ConfigurationError(f"lite.save(filter=...): the filter keys {unknown} are not "
                                 f"present in the state keys {sorted(state)}")
    out: dict[str, Any] = {}
    for key, value in state.items():
        keep = filter.get(key)
        if keep is None or not isinstance(value, Mapping):
            out[key] = value
            continue
        if not callable(keep):
            raise ConfigurationTypeError(f"lite.save(filter={{{key!r}: {keep!r}}}): each "
                                         f"filter should be callable, given {keep!r}")
        kept = {k: v for k, v in value.items() if keep(k, v)}
        if kept:
            out[key] = kept
    return out


def _named_entries(state: dict[str, Any]) -> bool:
    """Whether ``state`` is a dictionary of named entries (``{"model": ..., "step": 3}``), which
    can carry fulmen's ``fault_tolerance`` record, rather than a bare state dict of tensors."""
    return not all(isinstance(v, torch.Tensor) for v in state.values())


def _as_list(value: Any, flag: str) -> list[Any]:
    """``callbacks`` as a list; a number or text in it is a mistake, not an object whose hooks
    would be skipped silently (``loggers`` are resolved by :func:`fulmen.loggers.resolve_loggers`:
    names are registered loggers there)."""
    if value is None:
        return []
    items = list(value) if isinstance(value, list | tuple) else [value]
    for item in items:
        if isinstance(item, type):
            raise ConfigurationError(
                f"Lite({flag}=...) got the class {item.__module__}.{item.__qualname__}, not an "
                f"instance of it: pass an instance, {flag}=[{item.__name__}()] (with its "
                "arguments)")
        if item is None or isinstance(item, int | float | str | bytes):
            raise ConfigurationError(f"Lite({flag}={value!r}): got {item!r}; {flag} takes "
                                     "objects with hook methods (on_train_start...), or a list "
                                     "of them")
    return items


class Lite(SelectionReport):
    """Subclass and override ``run()``, or call ``lite.launch(fn)``.

    Takes the selection arguments of the ``Trainer`` (legacy ``gpus=`` and ``tpu_cores=``
    included) and composes the same plugins the same way.
    """

    @arguments.suggest_unknown_keywords("Lite")
    def __init__(
        self,
        accelerator: Any = "auto",
        strategy: Any = "auto",
        devices: Any = "auto",
        num_nodes: int = 1,
        precision: Any = "32-true",
        plugins: Sequence[Any] | Any | None = None,
        callbacks: list[Any] | Any | None = None,
        loggers: list[Any] | Any | None = None,
        gpus: Any = None,
        tpu_cores: Any = None,
    ) -> None:
        if precision is None:  # Fabric's default: 32-true, or the Precision in plugins
            precision = "32-true"
        if any(k.startswith("LT_") for k in os.environ):  # set by Fabric's command line
            from fulmen.dropin import fabric_env

            settings = fabric_env.arguments_from_env(
                accelerator=accelerator, strategy=strategy, devices=devices,
                num_nodes=num_nodes, precision=precision)
            accelerator, strategy, devices = (settings["accelerator"], settings["strategy"],
                                              settings["devices"])
            num_nodes, precision = settings["num_nodes"], settings["precision"]
        arguments.check_selection("Lite", accelerator=accelerator, strategy=strategy,
                                  devices=devices)
        quick_exit.install()
        self._selection = select("Lite", accelerator=accelerator, strategy=strategy,
                                 devices=devices, num_nodes=num_nodes, precision=precision,
                                 plugins=plugins, gpus=gpus, tpu_cores=tpu_cores)
        self._callbacks = _as_list(callbacks, "callbacks")

        #: the loggers, called under the logger contract's rules (rank zero, failures isolated)
        self.logger_set = LoggerSet(
            resolve_loggers(loggers, os.getcwd(), "loggers"),
            rank=functools.partial(_global_rank, self), buffered=False)
        self._log_step = 0  # the step of a metric logged without one
        self._launched = False
        self._backward: Callable[..., None] | None = None  # strategy.backward, once set up
        #: the strategy's background writer when it has one (a failed save stops ``backward``)
        self._background: AsyncCheckpointIO | None = None
        self._preemption: LitePreemption | None = None  # made in each process when first used

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is not None and not getattr(run, "_lite_launches", False):
            @functools.wraps(run)
            def launching_run(self: Lite, *args: Any, **kwargs: Any) -> Any:
                if self._launched:  # run() called from inside run(): no second launch
                    return run(self, *args, **kwargs)
                return self._launch(_original_run, self, *args, **kwargs)

            launching_run._lite_launches = True  # type: ignore[attr-defined]
            cls.run = launching_run  # type: ignore[method-assign]

    # ------------------------------------------------------------------ running

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Override with your training loop; calling it starts the processes and runs it in
        each one."""
        raise NotImplementedError(f"{type(self).__name__} has no run(); override it, or call "
                                  "lite.launch(fn) with fn(lite, ...)")

    def launch(self, function: Callable[..., Any] = _NO_FUNCTION, *args: Any,
               **kwargs: Any) -> Any:
        """Run ``function(self, *args, **kwargs)`` in every process; rank zero's result returns.
        Without a function, start the processes (a launcher that re-runs the script) and go
        on with the script in each."""
        if function is _NO_FUNCTION:
            launcher = self.strategy.launcher
            if launcher is not None and launcher.is_interactive_compatible:
                raise ConfigurationError(
                    f"lite.launch() without a function: strategy {self.strategy.name!r} starts "
                    "its processes from a function, so pass the function to run in each: "
                    "lite.launch(train)")
            return self._launch(_do_nothing, self)
        if not callable(function):
            raise ConfigurationTypeError(
                f"lite.launch(...) needs to be a callable taking the Lite first, got "
                f"{type(function).__name__}: pass the function itself, lite.launch(train), not "
                "lite.launch(train(lite))")
        try:
            takes = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature: let the call tell
            takes = None
        if takes is not None and not any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                    p.VAR_POSITIONAL) for p in takes):
            raise ConfigurationTypeError(
                f"lite.launch({getattr(function, '__name__', function)}): the function needs to "
                "take at least one argument, the Lite: def train(lite): ...")
        return self._launch(function, self, *args, **kwargs)

    def _launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.strategy.launch(self._run_in_process, function, *args, **kwargs)

    def _run_in_process(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        quick_exit.install()  # in a spawned rank too, where __init__ did not run
        with hang.watching(f"strategy setup ({self.strategy.name}.setup_environment: the "
                           "process group)", self.strategy):
            self._setup_environment()
        self._launched = True
        preempted: SystemExit | None = None
        try:
            try:
                result = function(*args, **kwargs)
            except SystemExit as exc:  # lite.preemption.exit() after the preemption checkpoint
                if self._preemption is None or not self._preemption.is_exit(exc):
                    raise
                preempted = exc
            if function is not _do_nothing and (self._preemption is not None
                                                or self.preemption_notices):
                preempted = self.preemption.close(failed=False)  # (says if never asked)
            self.strategy.checkpoint_io.teardown()  # background saves finish (or fail) here
        except BaseException as exc:
            if self._preemption is not None:
                self._preemption.close(failed=True)
            self.strategy.on_exception(exc)
            if function is not _do_nothing:
                self.logger_set.finalize(INTERRUPTED if isinstance(exc, KeyboardInterrupt)
                                         else FAILED)
            raise
        if preempted is not None:  # saved after a stop notice: leave as the scheduler expects
            self.logger_set.finalize(INTERRUPTED)
            raise preempted
        if function is not _do_nothing:  # the loop ran here: its loggers' runs end with it
            self.logger_set.finalize(SUCCESS)
        return result

    def _setup_environment(self) -> None:
        if "Lite" in self.strategy.reseeds_at_setup:  # as Fabric's FSDP, DeepSpeed do
            from fulmen.seed import reset_seed

            reset_seed()
        self.strategy.setup_environment()

    def _require_launched(self, call: str) -> None:
        """Methods work in a plain script when the strategy runs in this one process (as
        Fabric's do); a strategy that starts processes needs ``launch()``/``run()`` first."""
        if self._launched:
            return
        if self.strategy.launcher is None:
            self._setup_environment()
            set_rank(self.global_rank)
            self._launched = True
            return
        raise CallOrderError(f"lite.{call}() was called before the processes started: "
                             f"strategy {self.strategy.name!r} runs {self.world_size} processes, "
                             "so you must call `.launch()` first, or call it inside run() (or the "
                             "function given to lite.launch)")

    # ------------------------------------------------------------------ loggers and callbacks

    @property
    def loggers(self) -> list[Any]:
        return list(self.logger_set.loggers)

    @property
    def logger(self) -> Any:
        return self.logger_set.loggers[0] if self.logger_set.loggers else None

    def log(self, name: str, value: Any, step: int | None = None) -> None:
        """Send one metric to every logger (from rank zero); tensors become numbers."""
        self.log_dict({name: value}, step=step)

    def log_dict(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Send several metrics to every logger (from rank zero)."""
        values: dict[str, float] = {}
        for key, value in metrics.items():
            if isinstance(value, torch.Tensor):
                if value.numel() != 1:
                    raise ConfigurationError(
                        f"lite.log({key!r}, tensor of shape {tuple(value.shape)}): it cannot be "
                        "converted to a scalar. Log one number (e.g. value.mean())")
                value = value.item()
            values[key] = value
        if step is None:
            step = self._log_step
        self._log_step = step + 1
        self.logger_set.log_metrics(values, step)

    def call(self, hook_name: str, *args: Any, **kwargs: Any) -> None:
        """Call ``hook_name(*args, **kwargs)`` on every callback that defines it."""
        for callback in self._callbacks:  # a callback without the hook is skipped, as in Fabric
            method = getattr(callback, hook_name, None)
            if method is None:
                continue
            if not callable(method):
                rank_zero_warn(f"Skipping the callback `{type(callback).__name__}.{hook_name}` "
                               "because it is not callable")
                continue
            method(*args, **kwargs)

    # ------------------------------------------------------------------ stop notices

    @property
    def preemption(self) -> LitePreemption:
        """This process's stop notices, step count and lost work (see :meth:`should_stop`):
        ``global_step``, ``action``, ``notice``, ``resume``, ``checkpoint``, ``exit_code``,
        ``exit()``."""
        self._require_launched("preemption")
        if self._preemption is None:
            self._preemption = LitePreemption(self, functools.partial(_loggers_of, self))
        return self._preemption

    def should_stop(self, step: int | None = None) -> bool:
        """Call at each step boundary of the loop: True, on every rank after the same step,
        once a stop notice arrived (SIGTERM from torchrun, Kubernetes or a scheduler; SLURM's
        signals; a notice in ``Lite(plugins=["aws_spot"])``). Then save with ``lite.save(path,
        state)`` (the preemption checkpoint, timed against the notice window) and leave the loop;
        when ``run()`` or the launched function returns, each process exits with the scheduler's
        convention (requeue and 0 under SLURM's requeue signal; else 128 + the signal, 143).

        The first call starts watching the notices; before it, a signal acts as it would
        without fulmen. In one process nothing is communicated; with several, the ranks agree
        with an asynchronous vote about every half second of training, never at every step.
        ``step``: the optimizer steps done so far (default: one more than at the last call, or
        than the step of the checkpoint ``lite.load`` restored); it is what the checkpoints and
        the lost-work report count."""
        return self.preemption.should_stop(step)

    # ------------------------------------------------------------------ set-up

    @property
    def device(self) -> torch.device:
        """The device this process computes on."""
        return self.strategy.root_device

    def setup(self, module: torch.nn.Module, *optimizers: torch.optim.Optimizer,
              move_to_device: bool = True, compile: bool | dict[str, Any] | None = None) -> Any:
        """``model`` or ``(model, *optimizers)``, wrapped for the strategy and precision.
        ``compile``: True or ``torch.compile`` keyword arguments (see ``setup_module``)."""
        wrapped = self.setup_module(module, move_to_device=move_to_device, compile=compile)
        if not optimizers:
            return wrapped
        lite_optimizers = self._wrap_optimizers(optimizers)
        original = wrapped.module
        if isinstance(original, Module):  # its optimizers() returns these (Fabric's rule)
            original.lite_optimizers = list(lite_optimizers)
        return (wrapped, *lite_optimizers)

    def setup_module(self, module: torch.nn.Module, move_to_device: bool = True,
                     compile: bool | dict[str, Any] | None = None) -> LiteModule:
        """Wrap a module (for strategies like FSDP that must wrap before the optimizer is
        built: call this, then create the optimizer, then ``setup_optimizers``).

        ``compile=True`` (or a dict of ``torch.compile`` arguments) compiles what the strategy
        wrapped, after wrapping; a module from ``torch.compile(model)`` is unwrapped, set up, and
        compiled again the same way. State dicts keep the plain module's key names."""
        self._require_launched("setup_module")
        settings = compiling.options("Lite.setup", compile)
        module, recompile = compiling.unwrap(module)
        settings = recompile if settings is None else settings
        compiling.check_backend("Lite.setup", settings, self.strategy.root_device.type)
        if isinstance(module, LiteModule) and module.strategy is not self.strategy:
            raise ConfigurationError(f"lite.setup_module: this {type(module.module).__name__} "
                                     "was set up by another Lite; set the plain module up with "
                                     "this one (model.module is it)")
        if isinstance(module, LiteModule):
            raise ConfigurationError(
                f"A model should be passed only once to the `setup_module` method: this "
                f"{type(module.module).__name__} is already set up. Keep using what setup "
                "returned (or set up the plain module, model.module)")
        if not isinstance(module, torch.nn.Module):
            raise ConfigurationError(f"lite.setup got a {type(module).__name__}; it takes a "
                                     "torch.nn.Module")
        strategy = self.strategy
        if move_to_device:
            forward = strategy.setup_module(module)
        else:
            module = strategy.precision.convert_module(module)
            strategy.module, strategy.model = module, strategy.wrap_module(module)
            forward = strategy.model
        self._backward = strategy.backward
        self._writer(False)  # notes a background writer the strategy came with
        if settings is not None:
            forward = torch.compile(forward, **settings)  # type: ignore[assignment]
        original = strategy.module or module
        if isinstance(original, Module):  # as Fabric with a LightningModule: its self.log,
            original.lite = self  # optimizers(), backward... go through this Lite, and
            if original not in self._callbacks:  # lite.call(hook) reaches its hooks
                self._callbacks.append(original)
        return LiteModule(forward, original, strategy, owner=self)

    def setup_optimizers(self, *optimizers: torch.optim.Optimizer) -> Any:
        """Wrap optimizers; returns one or a tuple."""
        wrapped = self._wrap_optimizers(optimizers)
        return wrapped[0] if len(wrapped) == 1 else wrapped

    def _wrap_optimizers(self, optimizers: Sequence[Any]) -> tuple[LiteOptimizer, ...]:
        self._require_launched("setup_optimizers")
        for optimizer in optimizers:
            if isinstance(optimizer, LiteOptimizer):
                owner = "this" if optimizer.strategy is self.strategy else "another"
                raise ConfigurationError(
                    f"An optimizer should be passed only once to the `setup_optimizers` method: "
                    f"this {type(optimizer.optimizer).__name__} is already set up by {owner} "
                    "Lite. Pass the plain optimizer (optimizer.optimizer) to set it up once")
            if not isinstance(optimizer, torch.optim.Optimizer):
                raise ConfigurationError(f"lite.setup_optimizers got a "
                                         f"{type(optimizer).__name__}; it takes "
                                         "torch.optim.Optimizer objects")
        prepared = self.strategy.setup_optimizers(list(optimizers))
        return tuple(LiteOptimizer(o, self.strategy) for o in prepared)

    def setup_dataloaders(self, *dataloaders: Any, use_distributed_sampler: bool = True,
                          move_to_device: bool = True,
                          replace_sampler: bool | None = None) -> Any:
        """Give each dataloader its distributed sampler and device transfer; one or a tuple."""
        use_distributed_sampler = translate_flag(
            "Lite.setup_dataloaders", "replace_sampler", "use_distributed_sampler",
            replace_sampler, use_distributed_sampler, True)
        self._require_launched("setup_dataloaders")
        if not dataloaders:
            raise ConfigurationError("`setup_dataloaders` requires at least one dataloader: "
                                     "lite.setup_dataloaders(train_loader, val_loader)")
        wrapped = []
        for loader in dataloaders:
            if isinstance(loader, LiteDataLoader):
                raise ConfigurationError("A dataloader should be passed only once to the "
                                         "`setup_dataloaders` method: this one is already set "
                                         "up (its .dataloader is the plain one)")
            if not isinstance(loader, torch.utils.data.DataLoader):
                raise ConfigurationTypeError(f"lite.setup_dataloaders got a "
                                             f"{type(loader).__name__}; it takes "
                                             "torch.utils.data.DataLoader objects")
            loader = self.strategy.process_dataloader(loader, "lite", use_distributed_sampler)
            from fulmen.trainer.data import seed_workers

            seed_workers(loader, self.global_rank)
            wrapped.append(LiteDataLoader(loader, self.strategy, move_to_device))
        return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)

    # ------------------------------------------------------------------ the loop

    def _check_owner(self, wrapped: LiteModule | LiteOptimizer, call: str) -> None:
        if wrapped.strategy is not self.strategy:
            kind = "model" if isinstance(wrapped, LiteModule) else "optimizer"
            raise ConfigurationError(f"lite.{call}: this {kind} was set up by another Lite; use "
                                     f"each {kind} with the Lite that set it up")

    def backward(self, tensor: torch.Tensor, *args: Any, model: Any = None,
                 **kwargs: Any) -> None:
        """``loss.backward()`` through the strategy and precision (loss scaling)."""
        if model is not None:
            self._check_owner(model, "backward")
        backward = self._backward
        if backward is None:
            raise CallOrderError("lite.backward(loss): no model was set up. Call "
                                 "model, optimizer = self.setup(model, optimizer) first and "
                                 "compute the loss with the returned model")
        if self._background is not None:
            self._background.raise_failure()  # a background save that failed stops training
        backward(tensor, *args, **kwargs)

    def autocast(self) -> contextlib.AbstractContextManager[None]:
        """The precision's autocast, for code outside the set-up model's forward."""
        return self.strategy.precision.forward_context()

    def to_device(self, obj: Any) -> Any:
        """Move a module, a tensor or a nested collection of tensors to ``self.device``."""
        if isinstance(obj, torch.nn.Module):
            return obj.to(self.device)
        return self.strategy.batch_to_device(obj)

    def clip_gradients(self, module: Any, optimizer: Any, clip_val: float | None = None,
                       max_norm: float | None = None, norm_type: float = 2.0,
                       error_if_nonfinite: bool = True) -> Any:
        """Clip by norm (``max_norm``) or by value (``clip_val``), after unscaling."""
        if (max_norm is None) == (clip_val is None):
            raise ConfigurationError("lite.clip_gradients: give exactly one of max_norm= or "
                                     "clip_val=")
        if not isinstance(optimizer, LiteOptimizer):
            raise FulmenError("lite.clip_gradients got an optimizer that was not set up; pass "
                              "the one returned by lite.setup")
        self._check_owner(optimizer, "clip_gradients")
        if norm_type != 2.0 or not error_if_nonfinite:
            raise ConfigurationError(
                f"lite.clip_gradients(norm_type={norm_type}, error_if_nonfinite="
                f"{error_if_nonfinite}): strategies clip by the 2-norm and fail on non-finite "
                "norms; leave both at their defaults, or clip the module's gradients yourself "
                "(torch.nn.utils.clip_grad_norm_) after lite.backward")
        value = max_norm if max_norm is not None else clip_val
        return self.strategy.clip_gradients(getattr(module, "module", module),
                                            optimizer.optimizer, float(value),  # type: ignore[arg-type]
                                            "norm" if max_norm is not None else "value")

    @contextlib.contextmanager
    def no_backward_sync(self, module: Any, enabled: bool = True) -> Iterator[None]:
        """Skip the gradient all-reduce inside (accumulate, then step outside)."""
        if not isinstance(module, LiteModule):
            raise ConfigurationError(f"lite.no_backward_sync got a {type(module).__name__}; "
                                     "pass the model returned by lite.setup")
        self._check_owner(module, "no_backward_sync")
        if not enabled:
            yield
            return
        with self.strategy.no_backward_sync():
            yield

    # ------------------------------------------------------------------ collectives

    def _as_tensors(self, data: Any) -> Any:
        """Numbers (and numpy scalars) in ``data`` become tensors on this process's device."""
        import numpy as np

        from fulmen.utilities.apply_func import apply_to_collection

        return apply_to_collection(data, (int, float, np.number),
                                   lambda n: torch.tensor(n, device=self.device))

    def all_gather(self, data: Any, sync_grads: bool = False) -> Any:
        """Gather tensors (and numbers) from every process, stacked on a new first dimension;
        ``data`` may be a nested collection."""
        self._require_launched("all_gather")
        data = self._as_tensors(data)
        return apply_to_tensors(data, lambda t: self.strategy.all_gather(t, sync_grads))

    def all_reduce(self, data: Any, reduce_op: str = "mean") -> Any:
        """Reduce tensors (and numbers) across processes: ``"mean"``, ``"sum"``, ``"max"``,
        ``"min"``; ``data`` may be a nested collection. Numbers come back as tensors."""
        self._require_launched("all_reduce")
        if reduce_op not in ("mean", "sum", "max", "min"):
            raise ConfigurationError(f"lite.all_reduce(reduce_op={reduce_op!r}): use 'mean', "
                                     "'sum', 'max' or 'min'")
        data = self._as_tensors(data)
        return apply_to_tensors(data, lambda t: self.strategy.reduce(
            t.float() if reduce_op == "mean" and not t.is_floating_point() else t, reduce_op))

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        self._require_launched("broadcast")
        with hang.watching(f"lite.broadcast(src={src})", self.strategy):
            return self.strategy.broadcast(obj, src)

    def barrier(self, name: str | None = None) -> None:
        self._require_launched("barrier")
        with hang.watching(f"lite.barrier({name!r})" if name else "lite.barrier()",
                           self.strategy):
            self.strategy.barrier(name)

    def print(self, *args: Any, **kwargs: Any) -> None:
        """``print`` on global rank zero only."""
        if self.is_global_zero:
            print(*args, **kwargs)

    @contextlib.contextmanager
    def rank_zero_first(self, local: bool = False) -> Iterator[None]:
        """Rank zero (of the node, with ``local=True``) runs the block first, then the others
        (downloads, caches)."""
        first = self.local_rank == 0 if local else self.is_global_zero
        if not first:
            self.barrier("rank_zero_first")
        yield
        if first:
            self.barrier("rank_zero_first")

    @contextlib.contextmanager
    def init_module(self, empty_init: bool | None = None) -> Iterator[None]:
        """Create parameters directly on the device, in the precision's dtype.
        ``empty_init=True`` skips the initialisation of weights that a checkpoint will
        overwrite anyway (faster for large models); under a strategy that materialises each
        rank's shard after parallelising (``model_parallel``), the model is built on its
        ``module_init_context`` (the meta device) and ``setup`` runs each submodule's
        ``reset_parameters``, as in Fabric."""
        self._require_launched("init_module")
        skip = EmptyInit() if empty_init else contextlib.nullcontext()
        where = (self.strategy.module_init_context() if empty_init
                 else contextlib.nullcontext())
        with torch.device(self.device), self.strategy.precision.module_init_context(), skip, \
                where:
            yield

    @contextlib.contextmanager
    def init_tensor(self) -> Iterator[None]:
        """Create tensors directly on the device, in the precision's dtype."""
        self._require_launched("init_tensor")
        with torch.device(self.device), self.strategy.precision.module_init_context():
            yield

    @staticmethod
    def seed_everything(seed: int | None = None, workers: bool | None = None,
                        verbose: bool = True) -> int:
        """:func:`fulmen.seed_everything`, with dataloader workers seeded by default."""
        from fulmen.seed import seed_everything

        return seed_everything(seed, workers=True if workers is None else workers,
                               verbose=verbose)

    # ------------------------------------------------------------------ checkpoints

    def save(self, path: Any, state: Any,
             filter: dict[str, Callable[[str, Any], bool]] | None = None,
             async_save: bool = False) -> None:
        """``save(path, {"model": model, "optimizer": optimizer, "step": 3})`` (Fabric's form:
        modules and optimizers become their state), or ``save(path, model.state_dict())``;
        LightningLite's order ``save(content, path)`` is accepted too. ``filter`` maps a key of
        the state to ``fn(name, value) -> bool`` choosing which of that entry's items are kept
        (e.g. only trainable weights). Written once, atomically; ``path`` may be an fsspec URL
        (``s3://bucket/run/step-100.ckpt``). ``async_save=True`` returns once the state is
        copied to CPU and writes it in the background (one save in flight; a failure is raised
        by the next ``backward``, ``save``, ``load`` or at the end of ``run``)."""
        if isinstance(path, Mapping) and isinstance(state, str | os.PathLike):
            path, state = state, path  # LightningLite's save(content, filepath)
        if isinstance(state, Mapping):
            state = self._state_of(dict(state))
        self._require_launched("save")
        if filter is not None:
            state = _apply_filter(state, filter)
        self._check_writable(path)
        preemption = self._preemption
        started = time.monotonic()
        if preemption is not None and isinstance(state, dict) and _named_entries(state):
            preemption.saving(path)
            entry = preemption.entry()  # when and why it was saved, the resumes so far
            if entry is not None:
                state = {**state, KEY: entry}
        preempting = preemption is not None and preemption.preempting
        async_save = async_save and not preempting  # the preemption checkpoint is committed
        writer = self._writer(async_save)
        service.save(self.strategy, state, path)
        if writer is not None and not async_save:
            writer.wait()  # this save was asked to be synchronous
        self.strategy.barrier("lite.save")
        if preempting:
            assert preemption is not None
            preemption.saved(path, time.monotonic() - started)

    def _writer(self, async_save: bool) -> AsyncCheckpointIO | None:
        """The strategy's background writer, installed on the first ``async_save=True``."""
        io = self.strategy.checkpoint_io
        if async_save and not isinstance(io, AsyncCheckpointIO):
            io = self.strategy.checkpoint_io = AsyncCheckpointIO(io)
        self._background = io if isinstance(io, AsyncCheckpointIO) else None
        return self._background

    def load(self, path: Any, state: dict[str, Any] | None = None, strict: bool = True,
             weights_only: bool | None = None) -> Any:
        """``load(path)`` returns what was saved; ``load(path, state)`` restores the modules,
        optimizers and objects with ``load_state_dict`` in ``state`` in place, sets plain
        entries, and returns the checkpoint's entries ``state`` did not name. ``strict=False``
        allows keys of ``state`` missing from the checkpoint and partial module weights."""
        self._require_launched("load")
        checkpoint = service.load(self.strategy, path, weights_only=weights_only)
        if isinstance(checkpoint, dict) and isinstance(checkpoint.get(KEY), dict):
            self.preemption.restored(checkpoint, path)  # lost work; the step count goes on
        if state is None:
            return checkpoint
        if not isinstance(checkpoint, dict):
            what = (f"a bare tensor of shape {list(checkpoint.shape)}"
                    if isinstance(checkpoint, torch.Tensor) else
                    f"a {type(checkpoint).__name__}")
            raise ConfigurationError(
                f"lite.load({str(path)!r}, state): the file holds {what}, not a dictionary of "
                f"named entries, so there is nothing to match the keys of state "
                f"({sorted(state)}) with. Read it with lite.load({str(path)!r}) (no state), "
                "or save a dictionary: lite.save(path, {'name': value, ...})")
        missing = [key for key in state if key not in checkpoint]
        if missing and strict:
            raise ConfigurationError(
                f"lite.load: {str(path)!r} has no {missing}; it holds {sorted(checkpoint)}. "
                "Pass strict=False to restore what is there")
        for key, target in state.items():
            if key in missing:
                continue
            try:
                self._restore(target, checkpoint[key], strict, state, key)
            except RuntimeError as exc:  # module keys or shapes that differ
                if not isinstance(target, torch.nn.Module):
                    raise
                from fulmen.checkpoint.fit import fit_error

                module = target.module if isinstance(target, LiteModule) else target
                raise fit_error(path, module, checkpoint[key], exc,
                                what=f"state[{key!r}] ({type(module).__name__})") from exc
        return {k: v for k, v in checkpoint.items() if k not in state and k != KEY}

    def load_raw(self, path: Any, obj: torch.nn.Module | torch.optim.Optimizer,
                 strict: bool = True, weights_only: bool | None = None) -> None:
        """Load a plain ``state_dict`` file (saved by ``torch.save``, not by ``lite.save``)
        into one module or optimizer."""
        self._require_launched("load_raw")
        state = service.load(self.strategy, path, weights_only=weights_only)
        self._restore(obj, state, strict, None, None)

    def _restore(self, target: Any, value: Any, strict: bool, state: dict[str, Any] | None,
                 key: str | None) -> None:
        if isinstance(target, LiteModule):
            self._check_owner(target, "load")
            self.strategy.load_module_state_dict(value, strict=strict, module=target.module)
        elif isinstance(target, torch.nn.Module):
            target.load_state_dict(value, strict=strict)
        elif isinstance(target, LiteOptimizer):
            self._check_owner(target, "load")
            self.strategy.load_optimizer_state(target.optimizer, value)
            target.refresh()
        elif isinstance(target, torch.optim.Optimizer) or callable(
                getattr(target, "load_state_dict", None)):
            target.load_state_dict(value)
        elif state is not None and key is not None:
            state[key] = value
        else:
            raise ConfigurationError(f"lite.load_raw got a {type(target).__name__}; it loads "
                                     "into a torch.nn.Module or an optimizer")

    def _state_of(self, content: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in content.items():
            if isinstance(value, LiteModule):
                out[key] = self.strategy.module_state_dict(value.module)
            elif isinstance(value, LiteOptimizer):
                out[key] = self.strategy.optimizer_state(value.optimizer)
            elif hasattr(value, "state_dict") and callable(value.state_dict):
                out[key] = value.state_dict()
            else:
                out[key] = value
        return out

    def _check_writable(self, path: Any) -> None:
        if not self.is_global_zero:
            return
        path = storage.local(os.fspath(path))
        if storage.is_url(path):
            storage.filesystem(path, what="lite.save path")  # a known scheme, its package there
            return
        folder = Path(path).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"lite.save: cannot create {str(folder)!r} ({exc})") from exc
        if not os.access(folder, os.W_OK):
            raise ConfigurationError(f"lite.save: {str(folder)!r} is not writable; nothing was "
                                     "written. Choose another path")


#: Lightning Fabric's name for :class:`Lite` (``lightning.fabric.Fabric``).
Fabric = Lite
