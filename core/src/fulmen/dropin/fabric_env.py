"""Fabric's command-line settings: ``fabric run --accelerator cpu --strategy ddp --devices 2
SCRIPT`` (and ``lightning run model``) start the script's processes with ``torchrun`` and pass
the settings as ``LT_ACCELERATOR``, ``LT_STRATEGY``, ``LT_DEVICES``, ``LT_NUM_NODES`` and
``LT_PRECISION`` (with ``LT_CLI_USED=1``). ``Lite``/``Fabric`` reads them as Fabric does, so such a
script runs the same under ``torchrun -m fulmen run SCRIPT`` with those variables set."""

from __future__ import annotations

import os
from typing import Any

from fulmen.errors import ConfigurationError

__all__ = ["DEFAULTS", "arguments_from_env", "cli_used"]

#: Fabric's defaults for the settings the command line can give
DEFAULTS: dict[str, Any] = {"accelerator": "auto", "strategy": "auto", "devices": "auto",
                            "num_nodes": 1, "precision": "32-true"}


def cli_used() -> bool:
    """True when Fabric's command line started this process (``LT_CLI_USED=1``)."""
    return bool(int(os.environ.get("LT_CLI_USED", "0") or "0"))


def arguments_from_env(**current: Any) -> dict[str, Any]:
    """``current`` with each setting replaced by its ``LT_<NAME>`` variable where one is set.
    Under the command line, a value given in the code that differs from the variable (and from
    the default) is an error, as in Fabric."""
    out = dict(current)
    for name, value in current.items():
        env_value = os.environ.get("LT_" + name.upper())
        if env_value is None:
            continue
        default = DEFAULTS[name]
        if env_value != str(value) and str(value) != str(default) and cli_used():
            raise ConfigurationError(
                f"Your code has `Fabric({name}={value!r}, ...)` but it conflicts with the value "
                f"`--{name}={env_value}` set through the CLI (LT_{name.upper()}). Remove it "
                "either from the CLI or from the Fabric object.")
        out[name] = int(env_value) if name == "num_nodes" else env_value
    return out
