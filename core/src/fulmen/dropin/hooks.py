"""Lightning's hook mixins (``lightning.pytorch.core.hooks``): ``ModelHooks``, ``DataHooks`` and
``CheckpointHooks``, each with Lightning's hooks doing what Lightning's defaults do. A
``fulmen.Module`` is all three and a ``fulmen.DataModule`` is a ``DataHooks`` (``isinstance``
answers as for Lightning's ``LightningModule`` and ``LightningDataModule``); subclass them to
give your own classes those hooks."""

from __future__ import annotations

from typing import Any

from fulmen.errors import ConfigurationError
from fulmen.module import Hooks
from fulmen.utilities.virtual_bases import AlsoMatches

__all__ = ["CheckpointHooks", "DataHooks", "ModelHooks"]


class ModelHooks(Hooks, AlsoMatches):
    """The model hooks of a ``LightningModule`` (``on_fit_start``... ``configure_model``)."""

    __also__ = ("fulmen.module:Module",)

    def on_validation_model_zero_grad(self) -> None:
        """Before validation (in fit): the gradients are zeroed."""

    def on_validation_model_eval(self) -> None:
        self.eval()  # type: ignore[attr-defined]

    def on_validation_model_train(self) -> None:
        self.train()  # type: ignore[attr-defined]

    def on_test_model_eval(self) -> None:
        self.eval()  # type: ignore[attr-defined]

    def on_test_model_train(self) -> None:
        self.train()  # type: ignore[attr-defined]

    def on_predict_model_eval(self) -> None:
        self.eval()  # type: ignore[attr-defined]

    def configure_sharded_model(self) -> None:
        """Deprecated in Lightning: ``configure_model``."""


class DataHooks(AlsoMatches):
    """The data hooks of a ``LightningModule`` or ``LightningDataModule``."""

    __also__ = ("fulmen.module:Module", "fulmen.datamodule:DataModule")

    def __init__(self) -> None:
        super().__init__()
        self.prepare_data_per_node: bool = True
        self.allow_zero_length_dataloader_with_multiple_devices: bool = False

    def prepare_data(self) -> None:
        """Download or write data (once per node, or once in all with
        ``prepare_data_per_node=False``)."""

    def setup(self, stage: str) -> None:
        """Build what ``stage`` needs, in every process."""

    def teardown(self, stage: str) -> None:
        """Release what ``setup`` built."""

    def _needed(self, name: str) -> Any:
        raise ConfigurationError(f"`{name}` must be implemented to be used with the Lightning "
                                 "Trainer")

    def train_dataloader(self) -> Any:
        return self._needed("train_dataloader")

    def test_dataloader(self) -> Any:
        return self._needed("test_dataloader")

    def val_dataloader(self) -> Any:
        return self._needed("val_dataloader")

    def predict_dataloader(self) -> Any:
        return self._needed("predict_dataloader")

    def transfer_batch_to_device(self, batch: Any, device: Any, dataloader_idx: int) -> Any:
        """``batch`` moved to ``device`` (tensors in any collection)."""
        from fulmen.utilities.apply_func import move_data_to_device

        return move_data_to_device(batch, device)

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        return batch

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        return batch


class CheckpointHooks(AlsoMatches):
    """``on_save_checkpoint`` / ``on_load_checkpoint`` of a ``LightningModule``."""

    __also__ = ("fulmen.module:Module",)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Read what ``on_save_checkpoint`` added to the checkpoint."""

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Add to the checkpoint about to be written."""
