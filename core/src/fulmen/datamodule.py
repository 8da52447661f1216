"""``fulmen.DataModule``: everything about the data in one reusable object."""

from __future__ import annotations

import inspect
from typing import Any

from fulmen.hparams import AttributeDict, HasHyperparameters, as_mapping, init_arguments, select


class DataModule(HasHyperparameters):
    """Override ``prepare_data`` (download, once per node), ``setup(stage)`` (split, per
    process) and the ``*_dataloader`` methods you need."""

    prepare_data_per_node: bool = True

    def __init__(self) -> None:
        self.trainer: Any = None
        self._hparams = AttributeDict()

    def prepare_data(self) -> None:
        """Download or write data to disk; runs once per node before ``setup``."""

    def setup(self, stage: str) -> None:
        """Build datasets for ``stage`` (``"fit"``, ``"validate"``, ``"test"``, ``"predict"``)."""

    def teardown(self, stage: str) -> None:
        """Release what ``setup`` built."""

    def train_dataloader(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no train_dataloader")

    def val_dataloader(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no val_dataloader")

    def test_dataloader(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no test_dataloader")

    def predict_dataloader(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no predict_dataloader")

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Change a batch before it moves to the device (used instead of the module's)."""
        return batch

    def transfer_batch_to_device(self, batch: Any, device: Any, dataloader_idx: int) -> Any:
        """Move a batch to ``device`` (used instead of the module's when overridden)."""
        from fulmen.apply import apply_to_tensors

        return apply_to_tensors(batch, lambda t: t.to(device, non_blocking=True))

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Change a batch on the device (used instead of the module's when overridden)."""
        return batch

    def on_exception(self, exception: BaseException) -> None:
        """A run failed with ``exception``."""

    def state_dict(self) -> dict[str, Any]:
        """State to save in checkpoints."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""

    def save_hyperparameters(self, *names: Any, ignore: str | list[str] | None = None,
                             logger: bool = True) -> None:
        """Record ``__init__`` arguments (all, or those named; or one dict/Namespace) in
        ``self.hparams``; they are logged with the module's at fit start."""
        ignore = [ignore] if isinstance(ignore, str) else list(ignore or [])
        if len(names) == 1 and not isinstance(names[0], str):
            chosen = {k: v for k, v in as_mapping(names[0]).items() if k not in ignore}
        else:
            frame = inspect.currentframe()
            assert frame is not None and frame.f_back is not None
            chosen = select(init_arguments(frame.f_back, self), names, ignore)
        self._hparams.update(chosen)
        self._log_hyperparams = logger

    @property
    def hparams(self) -> AttributeDict:
        return self._hparams
