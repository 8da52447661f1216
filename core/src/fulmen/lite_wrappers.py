"""What ``Lite.setup*`` returns: thin wrappers that route through the strategy and precision."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from fulmen.api.strategy import Strategy


class LiteModule(torch.nn.Module):
    """The user's module; forward runs through the strategy's wrapper under the precision's
    context, outputs come back in the default float type. Attributes, ``state_dict`` keys and
    methods are the original module's (``.module`` is it)."""

    def __init__(self, forward_module: torch.nn.Module, original: torch.nn.Module,
                 strategy: Strategy, owner: Any = None) -> None:
        super().__init__()
        self._forward_module = forward_module
        self._original_module = original
        self._strategy = strategy
        # the Lite that set it up, alive as long as what it returned (a fulmen.Module only
        # holds it weakly: Module.lite)
        object.__setattr__(self, "_owner", owner)
        # What every call reads, as plain attributes (no nn.Module lookup); calls skip this
        # wrapper's own nn.Module call machinery until something is registered on it (hooks,
        # ``compile``), which has nothing to run before then: both reach :meth:`forward`.
        object.__setattr__(self, "_forward_call", forward_module)
        object.__setattr__(self, "_direct", True)

    @property
    def module(self) -> torch.nn.Module:
        return self._original_module

    @property
    def strategy(self) -> Strategy:
        """The strategy of the Lite that set this module up."""
        return self._strategy

    @property
    def device(self) -> torch.device:
        """Where the module's parameters live (the process's device when it has none)."""
        for tensor in self._original_module.parameters():
            return tensor.device
        return self._strategy.root_device

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`forward`; through ``nn.Module.__call__`` once something is registered on the
        wrapper (hooks, ``compile``)."""
        if self.__dict__["_direct"]:
            return self.forward(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def _full_call(self) -> None:
        """Something was registered on the wrapper itself: every call goes through
        ``nn.Module.__call__`` from now on."""
        object.__setattr__(self, "_direct", False)

    def register_forward_pre_hook(self, *args: Any, **kwargs: Any) -> Any:
        self._full_call()
        return super().register_forward_pre_hook(*args, **kwargs)

    def register_forward_hook(self, *args: Any, **kwargs: Any) -> Any:
        self._full_call()
        return super().register_forward_hook(*args, **kwargs)

    def register_full_backward_pre_hook(self, *args: Any, **kwargs: Any) -> Any:
        self._full_call()
        return super().register_full_backward_pre_hook(*args, **kwargs)

    def register_full_backward_hook(self, *args: Any, **kwargs: Any) -> Any:
        self._full_call()
        return super().register_full_backward_hook(*args, **kwargs)

    def register_backward_hook(self, *args: Any, **kwargs: Any) -> Any:
        self._full_call()
        return super().register_backward_hook(*args, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        self._full_call()
        super().compile(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The precision's ``convert_input``, the forward, its ``convert_output``. The forward
        of the strategy's module (the one set up last) is ``strategy.step("forward", ...)``,
        which enters the precision's context (a strategy customising ``step`` sees every call,
        as the Trainer's ``training_step`` goes through it); another set-up module's runs in
        the precision's ``forward_context``."""
        strategy = self.__dict__["_strategy"]
        forward_module = self.__dict__["_forward_call"]
        precision = strategy.precision
        args, kwargs = precision.convert_input((args, kwargs))
        if strategy.model is forward_module:
            output = strategy.step("forward", *args, **kwargs)
        else:
            with precision.forward_context():
                output = forward_module(*args, **kwargs)
        return precision.convert_output(output)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._original_module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._original_module.load_state_dict(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._original_module, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or "_original_module" not in self.__dict__.get("_modules", {}):
            super().__setattr__(name, value)
        else:
            setattr(self._original_module, name, value)


class LiteOptimizer:
    """The user's optimizer, still an instance of its own class (``isinstance(opt, Adam)`` holds,
    so LR schedulers accept it): a subclass of both is made per optimizer class, sharing the
    optimizer's attributes (``param_groups``, ``state``, ``defaults``). ``step`` goes through
    the strategy and precision (loss scaling, skipped steps on overflow); ``state_dict``,
    ``load_state_dict`` and ``zero_grad`` are the optimizer's own."""

    _classes: dict[type, type] = {}

    def __init__(self, optimizer: torch.optim.Optimizer, strategy: Strategy) -> None:
        self.__dict__ = {k: v for k, v in optimizer.__dict__.items()
                         if k not in ("state_dict", "step", "zero_grad")}
        self.__class__ = _optimizer_class(type(optimizer))
        self._optimizer = optimizer
        self._strategy = strategy
        self.__dict__["zero_grad"] = optimizer.zero_grad  # the optimizer's own, called directly

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimizer that was set up."""
        return self._optimizer

    @property
    def strategy(self) -> Strategy:
        """The strategy of the Lite that set this optimizer up."""
        return self._strategy

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state numbered as ``torch.optim.Optimizer.state_dict`` numbers it
        (Fabric's form; gathered by strategies that shard it). ``Lite.save`` writes the
        portable form instead, keyed by parameter names."""
        from fulmen.checkpoint import canonical

        state = self._strategy.optimizer_state(self._optimizer)
        names = canonical.param_names(self._strategy.module, self._optimizer)
        if names is not None and canonical.is_keyed_by_name(state):
            return canonical.by_number(state, names)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state in either form (numbered, or keyed by parameter names)."""
        self._strategy.load_optimizer_state(self._optimizer, state_dict)
        self.refresh()

    def refresh(self) -> None:
        """Share the optimizer's attributes again (loading a state replaces ``state`` and
        ``param_groups`` with new objects)."""
        self.__dict__.update({k: v for k, v in self._optimizer.__dict__.items()
                              if k not in ("state_dict", "step", "zero_grad")})

    def zero_grad(self, *args: Any, **kwargs: Any) -> None:
        """The optimizer's own ``zero_grad``, with whatever arguments its class takes."""
        self._optimizer.zero_grad(*args, **kwargs)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """The update through the strategy and precision (which may scale, skip or run it)."""
        return self._strategy.optimizer_step(self._optimizer, closure)


def _optimizer_class(cls: type) -> type:
    made = LiteOptimizer._classes.get(cls)
    if made is None:
        made = type(f"Lite{cls.__name__}", (LiteOptimizer, cls), {})
        LiteOptimizer._classes[cls] = made
    return made


class LiteDataLoader:
    """The user's dataloader (with a distributed sampler if asked); batches are moved to the
    device, and ``set_epoch`` is called on distributed samplers at each new pass."""

    def __init__(self, dataloader: Any, strategy: Strategy, move_to_device: bool) -> None:
        self._dataloader = dataloader
        self._strategy = strategy
        self._move = move_to_device and strategy.root_device.type != "cpu"
        self._epoch = 0

    @property
    def dataloader(self) -> Any:
        return self._dataloader

    def __len__(self) -> int:
        return len(self._dataloader)

    def __iter__(self) -> Iterator[Any]:
        set_epoch = getattr(getattr(self._dataloader, "sampler", None), "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self._epoch)
        self._epoch += 1
        if not self._move:
            return iter(self._dataloader)  # the loader's own iterator: nothing per batch
        return map(self._strategy.batch_to_device, self._dataloader)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dataloader, name)


class EmptyInit(torch.overrides.TorchFunctionMode):
    """Inside, ``torch.nn.init`` functions leave tensors as allocated (no random fill): for
    weights a checkpoint overwrites right after."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__module__", None) == "torch.nn.init":
            return kwargs["tensor"] if "tensor" in kwargs else args[0]
        return func(*args, **kwargs)


def is_wrapped(obj: object) -> bool:
    """Whether ``obj`` is a module, optimizer or dataloader returned by ``Lite.setup*``
    (Fabric's ``lightning.fabric.is_wrapped``)."""
    return isinstance(obj, (LiteModule, LiteOptimizer, LiteDataLoader))
