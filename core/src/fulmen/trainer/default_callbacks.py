"""The callbacks a Trainer runs: those given, plus the defaults its flags ask for
(:func:`default_callbacks`), and those a module's ``configure_callbacks`` returns
(:func:`merge_callbacks`)."""

from __future__ import annotations

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError


def default_callbacks(callbacks: list[Callback], checkpointing: bool, progress: bool,
                       summary: bool) -> list[Callback]:
    """``callbacks`` plus the defaults the flags ask for and ``callbacks`` lacks (only the
    callback modules in use are imported)."""
    from fulmen.callbacks.checkpoint import ModelCheckpoint
    from fulmen.callbacks.progress import ProgressBar
    from fulmen.callbacks.summary import ModelSummary, RichModelSummary

    bars = [c for c in callbacks if isinstance(c, ProgressBar)]
    if len(bars) > 1:
        raise ConfigurationError(f"You added multiple progress bar callbacks to the Trainer "
                                 f"({', '.join(type(c).__name__ for c in bars)}); keep one of "
                                 "them")
    if bars and not progress:
        raise ConfigurationError(f"Trainer was configured with `enable_progress_bar=False` but "
                                 f"found `{type(bars[0]).__name__}` in callbacks list; drop one "
                                 "of them")
    has_checkpoint = any(isinstance(c, ModelCheckpoint) for c in callbacks)
    if has_checkpoint and not checkpointing:
        raise ConfigurationError("Trainer(enable_checkpointing=False) was given a "
                                 "ModelCheckpoint callback; drop one of them")
    extra: list[Callback] = []
    if summary and not any(isinstance(c, ModelSummary) for c in callbacks):
        rich = False  # rich bars get the rich table, as in Lightning
        if bars:
            from fulmen.callbacks.rich_progress import RichProgressBar

            rich = isinstance(bars[0], RichProgressBar)
        extra.append(RichModelSummary() if rich else ModelSummary())
    if progress and not bars:
        from fulmen.callbacks.tqdm_progress import TQDMProgressBar

        extra.append(TQDMProgressBar())
    if checkpointing and not has_checkpoint:
        extra.append(ModelCheckpoint())
    return callbacks + extra


def merge_callbacks(existing: list[Callback], from_model: list[Callback]) -> list[Callback]:
    """Callbacks from ``configure_callbacks`` replace the Trainer's of the same type."""
    if not from_model:
        return existing
    kinds = {type(c) for c in from_model}
    return [c for c in existing if type(c) not in kinds] + from_model
