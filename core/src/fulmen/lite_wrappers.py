"""What ``Lite.setup*`` returns: thin wrappers that route through the strategy and precision."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from fulmen.api.precision import Precision
from fulmen.api.strategy import Strategy


class LiteModule(torch.nn.Module):
    """The user's module; forward runs through the strategy's wrapper under the precision's
    context, outputs come back in the default float type. Attributes, ``state_dict`` keys and
    methods are the original module's (``.module`` is it)."""

    def __init__(self, forward_module: torch.nn.Module, original: torch.nn.Module,
                 strategy: Strategy) -> None:
        super().__init__()
        self._forward_module = forward_module
        self._original_module = original
        self._strategy = strategy
        precision = strategy.precision
        plain = all(getattr(type(precision), name) is getattr(Precision, name)
                    for name in ("convert_input", "convert_output", "forward_context"))
        # Hot path: a plain attribute (no nn.Module lookup) and no precision calls when the
        # precision does nothing to inputs, outputs or the forward context.
        object.__setattr__(self, "_call", forward_module if plain else None)

    @property
    def module(self) -> torch.nn.Module:
        return self._original_module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        call = self.__dict__["_call"]
        if call is not None:
            return call(*args, **kwargs)
        precision = self._strategy.precision
        args, kwargs = precision.convert_input((args, kwargs))
        with precision.forward_context():
            output = self._forward_module(*args, **kwargs)
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
    """The user's optimizer; ``step`` goes through the strategy and precision (loss scaling,
    skipped steps on overflow). Everything else is the optimizer's own."""

    def __init__(self, optimizer: torch.optim.Optimizer, strategy: Strategy) -> None:
        self.__dict__["_optimizer"] = optimizer
        self.__dict__["_strategy"] = strategy

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.__dict__["_optimizer"]

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        return self._strategy.optimizer_step(self.optimizer, closure)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_optimizer"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_optimizer"], name, value)


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
            yield from self._dataloader
            return
        for batch in self._dataloader:
            yield self._strategy.batch_to_device(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dataloader, name)
