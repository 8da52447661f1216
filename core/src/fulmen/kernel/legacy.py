"""Legacy spellings from older guides, translated with a warning that shows the new spelling."""

from __future__ import annotations

import warnings
from typing import Any

from fulmen.errors import ConfigurationError, FulmenDeprecationWarning
from fulmen.kernel.catalog import Catalog


def _warn(message: str) -> None:
    warnings.warn(message, FulmenDeprecationWarning, stacklevel=4)


def translate_selection(owner: str, catalog: Catalog, *, accelerator: Any, strategy: Any,
                        devices: Any, gpus: Any = None,
                        tpu_cores: Any = None) -> tuple[Any, Any, Any]:
    """(accelerator, strategy, devices) with ``gpus=``, ``tpu_cores=`` and a strategy name given
    as ``accelerator=`` moved to where they belong now."""
    for flag, value, hardware in (("gpus", gpus, "gpu"), ("tpu_cores", tpu_cores, "tpu")):
        if value is None:
            continue
        if devices != "auto":
            raise ConfigurationError(f"{owner}({flag}={value!r}, devices={devices!r}) sets the "
                                     f"devices twice; use {owner}(accelerator={hardware!r}, "
                                     f"devices={value!r}) alone")
        if value in (0, "0") or value == []:
            _warn(f"{owner}({flag}={value!r}) is deprecated; {flag}=0 means the CPU: use "
                  f"{owner}(accelerator='cpu')")
            accelerator = "cpu"
            continue
        legacy_pair = catalog.find("strategy", accelerator) is not None  # gpus=2, accelerator="ddp"
        same_hardware = (catalog.find("accelerator", accelerator)
                         is catalog.find("accelerator", hardware))
        if accelerator != "auto" and not legacy_pair and not same_hardware:
            raise ConfigurationError(f"{owner}({flag}={value!r}, accelerator={accelerator!r}) asks "
                                     f"for two kinds of hardware; use {owner}(accelerator="
                                     f"{hardware!r}, devices={value!r})")
        _warn(f"{owner}({flag}={value!r}) is deprecated; use "
              f"{owner}(accelerator={hardware!r}, devices={value!r})")
        if legacy_pair:
            strategy, _ = _strategy_from_accelerator(owner, catalog, accelerator, strategy,
                                                     hardware)
        accelerator = hardware
        devices = value
    if (isinstance(accelerator, str) and catalog.find("accelerator", accelerator) is None
            and catalog.find("strategy", accelerator) is not None):
        strategy, accelerator = _strategy_from_accelerator(owner, catalog, accelerator, strategy,
                                                           "auto")
    return accelerator, strategy, devices


def _strategy_from_accelerator(owner: str, catalog: Catalog, accelerator: str, strategy: Any,
                               hardware: str) -> tuple[Any, Any]:
    if strategy != "auto":
        raise ConfigurationError(f"{owner}(accelerator={accelerator!r}, strategy={strategy!r}): "
                                 f"{accelerator!r} is a strategy, and a strategy was given too; "
                                 f"keep strategy={strategy!r} and pick an accelerator from "
                                 f"{catalog.names('accelerator')}")
    _warn(f"{owner}(accelerator={accelerator!r}) is deprecated: {accelerator!r} is a strategy; use "
          f"{owner}(strategy={accelerator!r}" + (f", accelerator={hardware!r})" if hardware !=
                                                   "auto" else ")"))
    return accelerator, hardware


def translate_flag(owner: str, old: str, new: str, old_value: Any, new_value: Any,
                   default: Any) -> Any:
    """The value of a renamed flag (``replace_sampler_ddp`` → ``use_distributed_sampler``)."""
    if old_value is None:
        return new_value
    if new_value != default:
        raise ConfigurationError(f"{owner}({old}={old_value!r}, {new}={new_value!r}) sets the same"
                                 f" thing twice; keep {new}={new_value!r}")
    _warn(f"{owner}({old}={old_value!r}) is deprecated; use {owner}({new}={old_value!r})")
    return old_value
