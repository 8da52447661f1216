"""Lightning 1.x hooks that are never called, refused before a stage starts (as Lightning 2's
configuration validator does) rather than ignored in silence."""

from __future__ import annotations

from typing import Any

from fulmen.errors import LegacyHookError

#: stage -> the removed ``*_epoch_end(outputs)`` hooks that stage would have called
EPOCH_END_HOOKS = {
    "fit": ("training_epoch_end", "validation_epoch_end"),
    "validate": ("validation_epoch_end",),
    "test": ("test_epoch_end",),
    "predict": (),
}
_REPLACEMENT = {"training_epoch_end": "on_train_epoch_end",
                "validation_epoch_end": "on_validation_epoch_end",
                "test_epoch_end": "on_test_epoch_end"}


def refuse_legacy_hooks(module: Any, stage: str) -> None:
    """Raise :class:`~fulmen.errors.LegacyHookError` when ``module`` implements a 1.x
    ``*_epoch_end`` hook that ``stage`` would have called (Lightning 2's message and
    ``NotImplementedError``)."""
    for name in EPOCH_END_HOOKS.get(stage, ()):
        if callable(getattr(module, name, None)):
            stage_name = name.split("_")[0]
            raise LegacyHookError(
                f"Support for `{name}` has been removed in v2.0.0. `{type(module).__name__}` "
                f"implements this method. You can use the `{_REPLACEMENT[name]}` hook instead. "
                "To access outputs, save them in-memory as instance attributes (append each "
                f"step's output to a list in `{stage_name}_step` or `on_"
                f"{'train' if stage_name == 'training' else stage_name}_batch_end`, read and "
                f"clear it in `{_REPLACEMENT[name]}`). `fulmen migrate` rewrites this for you; "
                "see docs/migrating.md.")
