"""Checkpoint contents, reading, and restoring a run from one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from fulmen.api.checkpoint_io import safe_load
from fulmen.errors import ConfigurationError

FORMAT_KEY = "fulmen_version"
LIGHTNING_KEYS = ("pytorch-lightning_version", "lightning_version")


def read_checkpoint(path: str | Path, map_location: Any = None,
                    weights_only: bool | None = None) -> dict[str, Any]:
    """Load a checkpoint safely (``weights_only``; None: torch's rule, which the user's
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` turns off), with errors that say what to do: a file,
    or a canonical directory written by any strategy."""
    from fulmen.checkpoint import canonical, manifest, safety

    weights_only = safety.resolve_weights_only(weights_only)
    if canonical.is_directory(path):
        checkpoint: Any = canonical.read_directory(path, weights_only, reader="fulmen")
        if map_location is not None:
            from fulmen.apply import apply_to_tensors

            checkpoint = apply_to_tensors(checkpoint, lambda t: t.to(map_location))
    else:
        checkpoint = safe_load(path, map_location, weights_only)
        if isinstance(checkpoint, dict):
            manifest.check_version(checkpoint.get(manifest.KEY), str(path))
    require_state_dict(checkpoint, str(path))
    return checkpoint


def require_state_dict(checkpoint: Any, path: str) -> None:
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        keys = sorted(checkpoint)[:10] if isinstance(checkpoint, dict) else type(checkpoint)
        raise ConfigurationError(f"{path!r} is not a fulmen checkpoint: it has no "
                                 f"'state_dict' (found {keys})")


def require_fulmen_format(checkpoint: dict[str, Any], path: str) -> None:
    """Resuming needs loop and optimizer state only fulmen writes."""
    if FORMAT_KEY in checkpoint:
        return
    origin = next((k for k in LIGHTNING_KEYS if k in checkpoint), None)
    hint = (" It was written by Lightning; load its weights with "
            "YourModule.load_from_checkpoint(path) instead of resuming from it."
            if origin else "")
    raise ConfigurationError(f"{path!r} is not a fulmen checkpoint (no {FORMAT_KEY!r} key), so "
                             f"a run cannot resume from it.{hint}")


#: The oldest fulmen whose checkpoints this one resumes (loop state as counters).
OLDEST_RESUMABLE = "0.1.0"


def require_resumable_version(checkpoint: dict[str, Any], path: str) -> None:
    """Resuming reads loop, optimizer and callback state in this fulmen's format: refuse a
    checkpoint from a fulmen older than ``OLDEST_RESUMABLE`` or newer (major.minor) than this
    one, naming both versions and what would work. Weights load from any version."""
    from packaging.version import InvalidVersion, Version

    from fulmen.version import __version__

    written, running = checkpoint.get(FORMAT_KEY), __version__
    here = Version(running)
    accepted = f"fulmen {OLDEST_RESUMABLE} to {here.major}.{here.minor}.x"
    try:
        version = Version(str(written))
    except InvalidVersion:
        version = None
    if version is not None and Version(OLDEST_RESUMABLE) <= version and \
            (version.major, version.minor) <= (here.major, here.minor):
        return
    why = (f"its {FORMAT_KEY}={written!r} is not a version" if version is None else
           f"it was written by fulmen {written}, whose loop state this fulmen ({running}) "
           "cannot read")
    raise ConfigurationError(
        f"cannot resume from {path!r}: {why}. This fulmen resumes checkpoints written by "
        f"{accepted}. Resume with the fulmen that wrote it (pip install fulmen=={written}), or "
        "start a new run from its weights: YourModule.load_from_checkpoint(path)")


def check_keys(module: torch.nn.Module, state: dict[str, Any], path: str,
               remedy: str = "Pass strict=False to load the keys that match.") -> None:
    """An error that lists the missing and unexpected keys, if any, and says ``remedy``."""
    own = set(module.state_dict())
    missing = sorted(own - set(state))
    unexpected = sorted(set(state) - own)
    if missing or unexpected:
        raise ConfigurationError(
            f"checkpoint {path!r} does not fit {type(module).__name__}: missing keys "
            f"{_few(missing)}, unexpected keys {_few(unexpected)}. Was it saved from another "
            f"model? {remedy}"
        )


def load_state_into(module: torch.nn.Module, state: dict[str, Any], strict: bool,
                    path: str) -> Any:
    """``load_state_dict`` with an error that lists the missing and unexpected keys; returns
    what ``load_state_dict`` does (the missing and unexpected keys, when not ``strict``)."""
    if strict:
        check_keys(module, state, path)
    try:
        return module.load_state_dict(state, strict=strict)
    except RuntimeError as exc:  # shapes that differ
        from fulmen.checkpoint.fit import fit_error

        raise fit_error(path, module, state, exc, strict=strict) from exc


def _few(keys: list[str]) -> str:
    return str(keys) if len(keys) <= 8 else f"{keys[:8]} and {len(keys) - 8} more"
