"""``Lite``: scale a raw PyTorch loop with the same plugins and composition as the Trainer.

Five changes to a plain loop: subclass ``Lite`` and move the loop into ``run``; drop
``.to(device)`` calls; ``model, optimizer = self.setup(model, optimizer)``;
``loader = self.setup_dataloaders(loader)``; ``self.backward(loss)`` instead of
``loss.backward()``. Then ``MyLite(strategy="ddp", devices=2, precision="bf16-mixed").run()``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from fulmen.apply import apply_to_tensors
from fulmen.connector import SelectionReport, select
from fulmen.errors import ConfigurationError, FulmenError
from fulmen.legacy import translate_flag
from fulmen.lite_wrappers import LiteDataLoader, LiteModule, LiteOptimizer


def _original_run(lite: Lite, *args: Any, **kwargs: Any) -> Any:
    """The subclass's own ``run`` (picklable by reference, for spawned workers)."""
    return type(lite).run.__wrapped__(lite, *args, **kwargs)  # type: ignore[attr-defined]


class Lite(SelectionReport):
    """Subclass and override ``run()``, or call ``lite.launch(fn)``.

    Takes the selection arguments of the ``Trainer`` (legacy ``gpus=`` and ``tpu_cores=``
    included) and composes the same plugins the same way.
    """

    def __init__(
        self,
        accelerator: Any = "auto",
        strategy: Any = "auto",
        devices: Any = "auto",
        num_nodes: int = 1,
        precision: Any = "32-true",
        plugins: Sequence[Any] | Any | None = None,
        gpus: Any = None,
        tpu_cores: Any = None,
    ) -> None:
        self._selection = select("Lite", accelerator=accelerator, strategy=strategy,
                                 devices=devices, num_nodes=num_nodes, precision=precision,
                                 plugins=plugins, gpus=gpus, tpu_cores=tpu_cores)
        self._launched = False
        self._models_set_up = 0
        self._set_up: set[int] = set()

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

    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function(self, *args, **kwargs)`` in every process; rank zero's result returns."""
        if not callable(function):
            raise ConfigurationError(f"lite.launch(...) needs a function, got "
                                     f"{type(function).__name__}")
        return self._launch(function, self, *args, **kwargs)

    def _launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.strategy.launch(self._run_in_process, function, *args, **kwargs)

    def _run_in_process(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.strategy.setup_environment()
        self._launched = True
        try:
            return function(*args, **kwargs)
        except BaseException as exc:
            self.strategy.on_exception(exc)
            raise

    def _spawn_state(self) -> dict[str, Any]:
        return {}

    def _load_spawn_state(self, state: dict[str, Any]) -> None:
        pass

    def _require_launched(self, call: str) -> None:
        if not self._launched:
            raise FulmenError(f"lite.{call}() was called before the processes started; call it "
                              "inside run() (or the function given to lite.launch)")

    # ------------------------------------------------------------------ set-up

    @property
    def device(self) -> torch.device:
        """The device this process computes on."""
        return self.strategy.root_device

    def setup(self, module: torch.nn.Module, *optimizers: torch.optim.Optimizer,
              move_to_device: bool = True) -> Any:
        """``model`` or ``(model, *optimizers)``, wrapped for the strategy and precision."""
        wrapped = self.setup_module(module, move_to_device=move_to_device)
        if not optimizers:
            return wrapped
        return (wrapped, *self._wrap_optimizers(optimizers))

    def setup_module(self, module: torch.nn.Module, move_to_device: bool = True) -> LiteModule:
        """Wrap a module (for strategies like FSDP that must wrap before the optimizer is
        built: call this, then create the optimizer, then ``setup_optimizers``)."""
        self._require_launched("setup_module")
        if isinstance(module, LiteModule) or id(module) in self._set_up:
            name = type(getattr(module, "module", module)).__name__
            raise FulmenError(f"lite.setup_module: {name} is already set up; set each model up "
                              "once and keep using what setup returned")
        if not isinstance(module, torch.nn.Module):
            raise ConfigurationError(f"lite.setup got a {type(module).__name__}; it takes a "
                                     "torch.nn.Module")
        self._set_up.add(id(module))
        strategy = self.strategy
        if move_to_device:
            forward = strategy.setup_module(module)
        else:
            module = strategy.precision.convert_module(module)
            strategy.module, strategy.model = module, strategy.wrap_module(module)
            forward = strategy.model
        self._models_set_up += 1
        return LiteModule(forward, strategy.module or module, strategy)

    def setup_optimizers(self, *optimizers: torch.optim.Optimizer) -> Any:
        """Wrap optimizers; returns one or a tuple."""
        wrapped = self._wrap_optimizers(optimizers)
        return wrapped[0] if len(wrapped) == 1 else wrapped

    def _wrap_optimizers(self, optimizers: Sequence[Any]) -> tuple[LiteOptimizer, ...]:
        self._require_launched("setup_optimizers")
        for optimizer in optimizers:
            if isinstance(optimizer, LiteOptimizer):
                raise FulmenError("lite.setup_optimizers: this optimizer is already set up")
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
        wrapped = []
        for loader in dataloaders:
            if not isinstance(loader, torch.utils.data.DataLoader):
                raise ConfigurationError(f"lite.setup_dataloaders got a {type(loader).__name__}; "
                                         "it takes torch.utils.data.DataLoader objects")
            loader = self.strategy.process_dataloader(loader, "train", use_distributed_sampler)
            from fulmen.trainer.data import seed_workers

            seed_workers(loader, self.global_rank)
            wrapped.append(LiteDataLoader(loader, self.strategy, move_to_device))
        return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)

    # ------------------------------------------------------------------ the loop

    def backward(self, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """``loss.backward()`` through the strategy and precision (loss scaling)."""
        if self._models_set_up == 0:
            raise FulmenError("lite.backward(loss): no model was set up. Call "
                              "model, optimizer = self.setup(model, optimizer) first and "
                              "compute the loss with the returned model")
        self.strategy.backward(tensor, *args, **kwargs)

    def autocast(self) -> contextlib.AbstractContextManager[None]:
        """The precision's autocast, for code outside the set-up model's forward."""
        return self.strategy.precision.forward_context()

    def to_device(self, obj: Any) -> Any:
        """Move a module, a tensor or a nested collection of tensors to ``self.device``."""
        if isinstance(obj, torch.nn.Module):
            return obj.to(self.device)
        return self.strategy.batch_to_device(obj)

    def clip_gradients(self, module: Any, optimizer: Any, max_norm: float | None = None,
                       clip_val: float | None = None) -> Any:
        """Clip by norm (``max_norm``) or by value (``clip_val``), after unscaling."""
        if (max_norm is None) == (clip_val is None):
            raise ConfigurationError("lite.clip_gradients: give exactly one of max_norm= or "
                                     "clip_val=")
        if not isinstance(optimizer, LiteOptimizer):
            raise FulmenError("lite.clip_gradients got an optimizer that was not set up; pass "
                              "the one returned by lite.setup")
        value = max_norm if max_norm is not None else clip_val
        return self.strategy.clip_gradients(getattr(module, "module", module),
                                            optimizer.optimizer, float(value),  # type: ignore[arg-type]
                                            "norm" if max_norm is not None else "value")

    @contextlib.contextmanager
    def no_backward_sync(self, module: Any, enabled: bool = True) -> Iterator[None]:
        """Skip the gradient all-reduce inside (accumulate, then step outside)."""
        if not enabled:
            yield
            return
        with self.strategy.no_backward_sync():
            yield

    # ------------------------------------------------------------------ collectives

    def all_gather(self, data: Any, sync_grads: bool = False) -> Any:
        self._require_launched("all_gather")
        return apply_to_tensors(data, lambda t: self.strategy.all_gather(t, sync_grads))

    def all_reduce(self, data: Any, reduce_op: str = "mean") -> Any:
        self._require_launched("all_reduce")
        if isinstance(data, int | float):
            return float(self.strategy.reduce(torch.tensor(float(data)), reduce_op))
        return apply_to_tensors(data, lambda t: self.strategy.reduce(t, reduce_op))

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        self._require_launched("broadcast")
        return self.strategy.broadcast(obj, src)

    def barrier(self, name: str | None = None) -> None:
        self._require_launched("barrier")
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
    def init_module(self) -> Iterator[None]:
        """Create parameters directly on the device, in the precision's dtype."""
        with torch.device(self.device), self.strategy.precision.module_init_context():
            yield

    @staticmethod
    def seed_everything(seed: int | None = None, workers: bool = True) -> int:
        from fulmen.seed import seed_everything

        return seed_everything(seed, workers=workers)

    # ------------------------------------------------------------------ checkpoints

    def save(self, path_or_content: Any, content_or_path: Any) -> None:
        """``save(model.state_dict(), path)``, or ``save(path, {"model": model, ...})`` where
        modules and optimizers are turned into their state; written once, atomically."""
        if isinstance(path_or_content, str | os.PathLike) and isinstance(content_or_path, dict):
            path, state = path_or_content, self._state_of(content_or_path)
        else:
            path, state = content_or_path, path_or_content
        self._check_writable(Path(path))
        self.strategy.save_checkpoint(state, path)
        self.strategy.barrier("lite.save")

    def load(self, path: Any, state: dict[str, Any] | None = None,
             weights_only: bool = True) -> Any:
        """``load(path)`` returns what was saved; ``load(path, state)`` restores modules and
        optimizers in ``state`` in place and returns the entries ``state`` did not name."""
        checkpoint = self.strategy.load_checkpoint(path, weights_only=weights_only)
        if state is None:
            return checkpoint
        for key, target in state.items():
            if key not in checkpoint:
                raise ConfigurationError(f"lite.load: {str(path)!r} has no {key!r}; it holds "
                                         f"{sorted(checkpoint)}")
            if isinstance(target, torch.nn.Module):
                module = target.module if isinstance(target, LiteModule) else target
                try:
                    if isinstance(target, LiteModule):
                        self.strategy.load_module_state_dict(checkpoint[key], module=module)
                    else:
                        target.load_state_dict(checkpoint[key])
                except RuntimeError as exc:  # keys or shapes that differ
                    from fulmen.checkpoint.fit import fit_error

                    raise fit_error(path, module, checkpoint[key], exc,
                                    what=f"state[{key!r}] ({type(module).__name__})") from exc
            elif isinstance(target, LiteOptimizer):
                self.strategy.load_optimizer_state(target.optimizer, checkpoint[key])
            elif hasattr(target, "load_state_dict"):
                target.load_state_dict(checkpoint[key])
            else:
                state[key] = checkpoint[key]
        return {k: v for k, v in checkpoint.items() if k not in state}

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

    def _check_writable(self, path: Path) -> None:
        if not self.is_global_zero:
            return
        folder = path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"lite.save: cannot create {str(folder)!r} ({exc})") from exc
        if not os.access(folder, os.W_OK):
            raise ConfigurationError(f"lite.save: {str(folder)!r} is not writable; nothing was "
                                     "written. Choose another path")
