"""``LambdaCallback``: a callback made of plain functions, one per hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_warn

#: The hooks a LambdaCallback takes (every Callback hook but state_dict/load_state_dict).
HOOKS = tuple(name for name in vars(Callback)
              if (name.startswith("on_") or name in ("setup", "teardown"))
              and callable(vars(Callback)[name]))


class LambdaCallback(Callback):
    """``LambdaCallback(on_train_epoch_end=lambda trainer, module: ...)``: each keyword names a
    hook and gives the function the Trainer calls there, with the hook's arguments (the trainer
    and the module first)."""

    def __init__(self, **hooks: Callable[..., Any] | None) -> None:
        unknown = sorted(set(hooks) - set(HOOKS))
        if unknown:
            raise ConfigurationError(f"LambdaCallback got {', '.join(unknown)}, which "
                                     f"{'is not a hook' if len(unknown) == 1 else 'are not hooks'}"
                                     f"; the hooks are: {', '.join(sorted(HOOKS))}")
        for name, function in hooks.items():
            if function is None:
                continue
            if not callable(function):  # Lightning keeps it and never calls it
                rank_zero_warn(f"LambdaCallback({name}={function!r}) is not a function, so "
                               f"nothing runs at {name} (as in Lightning); give a function",
                               category=UserWarning)
                continue
            setattr(self, name, function)
