"""Importing Horovod, with an error that says how to get it."""

from __future__ import annotations

from typing import Any

from fulmen import ConfigurationError

INSTALL_HINT = (
    "fulmen-horovod does not pull Horovod in as a pip dependency: its last release (0.28.1) "
    "cannot be pip-built against current torch. Build it for the installed torch with "
    "`fulmen-build-horovod` (a command of fulmen-horovod; `make install-horovod` in a fulmen "
    "checkout runs it: about 15 minutes on 2 cores "
    "the first time, then the cached wheel is reused)")


def import_horovod() -> Any:
    """``horovod.torch``, or a ``ConfigurationError`` naming fulmen-horovod and the build."""
    try:
        import horovod.torch as hvd
    except (ImportError, OSError) as exc:
        raise ConfigurationError(
            f"strategy='horovod' needs Horovod with PyTorch support, which cannot be imported "
            f"here ({type(exc).__name__}: {exc}). {INSTALL_HINT}. Without Horovod, use "
            "strategy='ddp' (processes started by fulmen or torchrun).") from exc
    return hvd
