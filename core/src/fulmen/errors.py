"""One exception tree for everything fulmen raises on purpose.

``FulmenError`` is the root. A mistake in what a user asked for is a ``ConfigurationError`` (also a
``ValueError``, so ``except ValueError`` keeps working); a broken or clashing plugin is a
``PluginError``. Warnings about plugins are ``PluginWarning``; deprecated spellings warn with
``FulmenDeprecationWarning``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from fulmen import look


class FulmenError(Exception):
    """Root of every error fulmen raises on purpose. Under ``fulmen run`` (the Lightning look,
    :mod:`fulmen.look`) its message names user-facing classes by Lightning's names."""

    def __init__(self, *args: object, **kwargs: object) -> None:  # (ImportError's name=)
        if args and isinstance(args[0], str):
            args = (look.display(args[0]), *args[1:])
        super().__init__(*args, **kwargs)


class ConfigurationError(FulmenError, ValueError):
    """What the user asked for cannot work: the message says what was given, why, and what would."""


class ConfigurationTypeError(ConfigurationError, TypeError):
    """What was given is of the wrong type (a ``torch.nn.Module`` where a ``fulmen.Module`` is
    needed): also a ``TypeError``, which Lightning raises there."""


class MissingMetricError(ConfigurationError, RuntimeError):
    """A monitored metric was never logged (``EarlyStopping(strict=True)``): also a
    ``RuntimeError``, which Lightning raises there."""


class CallOrderError(FulmenError, RuntimeError):
    """A method was called before what it needs (``lite.backward`` before ``lite.setup``, a Lite
    method of a multi-process strategy before ``launch``): also a ``RuntimeError``, as Fabric
    raises there."""


class UnsafeCheckpointError(ConfigurationError):
    """A checkpoint file refers to Python code that safe loading refuses to run."""


class CorruptCheckpointError(ConfigurationError):
    """A checkpoint file is truncated or damaged."""


class PluginError(FulmenError):
    """A plugin is broken, clashes with another, or was disabled or failed when it was needed."""


class CheckpointSaveError(FulmenError):
    """A checkpoint written in the background (``async_save``) failed; raised at the next step,
    save or teardown, with the original error as its cause."""


class PluginWarning(UserWarning):
    """A plugin was isolated (failed to import or to answer a hook) or a plugin setting is odd."""


class LoggerWarning(UserWarning):
    """A logger (experiment tracker) failed; training goes on without it."""


class FulmenDeprecationWarning(DeprecationWarning):
    """A legacy spelling was used; the message shows the current one."""


def did_you_mean(given: str, choices: Iterable[str]) -> str:
    """``" Did you mean 'ddp'?"`` for the closest choice, or ``""`` when nothing is close."""
    close = difflib.get_close_matches(given.lower(), [str(c).lower() for c in choices], n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def format_choices(choices: Iterable[str]) -> str:
    """Sorted, quoted, comma-separated choices (``'cpu', 'cuda'``) or ``(none)``."""
    items = sorted({str(c) for c in choices})
    return ", ".join(repr(c) for c in items) if items else "(none)"


class RendezvousError(FulmenError, TimeoutError):
    """The processes of a run did not all join the process group within the rendezvous timeout;
    the message names the missing ranks, the address and port, and what to check."""


class HangError(FulmenError):
    """A rank made no progress for ``FULMEN_HANG_TIMEOUT`` seconds; the hang doctor reported
    where every rank waits and ended the job (see ``fulmen.hang``)."""


class StageExit(Exception):
    """Not an error: raised from a callback hook to end the running stage at once, skipping
    the rest of it; the Trainer tears down as after a finished run and the stage returns None.
    ``Tuner.lr_find``/``scale_batch_size`` use it to stop after tuning."""


class NonFiniteError(FulmenError, FloatingPointError):
    """The training loss became NaN or infinite and the run was asked to stop on it
    (``Trainer(detect_anomaly=True)``); the message names the epoch, step and batch index."""


class NonFiniteWarning(UserWarning):
    """The training loss became NaN or infinite (reported once per process and fit)."""


class LightningNameError(FulmenError, ImportError):
    """A Lightning module or name, imported through ``fulmen run``'s Lightning names, has no
    fulmen counterpart; the message names it and what does exist next to it."""


class LightningModuleNotFoundError(LightningNameError, ModuleNotFoundError):
    """``import`` of a Lightning module that ``fulmen run`` does not serve (a
    ``ModuleNotFoundError``, as for any missing module)."""


class LightningAttributeError(FulmenError, AttributeError):
    """Reading a name that a served Lightning module does not have (an ``AttributeError``, so
    ``hasattr`` and ``getattr(module, name, default)`` work); the message is
    :class:`LightningNameError`'s."""


class MissingDependencyError(FulmenError, ModuleNotFoundError):
    """A feature needs a library or hardware this environment lacks (``torch_xla`` for TPUs,
    ``bitsandbytes``, ``transformer_engine``, a tracker's client...). A
    ``ModuleNotFoundError``, as Lightning raises there; the message names what is missing and
    what to install or use instead."""


class LegacyHookError(FulmenError, NotImplementedError):
    """The module implements a Lightning 1.x hook that Lightning 2 (and fulmen) no longer call,
    such as ``training_epoch_end(outputs)``; raised before the stage starts, as Lightning 2 does
    (``NotImplementedError``), with the hook to use instead."""
