"""``WeightAveraging`` and ``EMAWeightAveraging`` (Lightning 2.6's callbacks): keep a
``torch.optim.swa_utils.AveragedModel`` of the module, updated after training steps (or
epochs) as ``should_update`` says; validation runs with the averaged weights, and they replace
the module's at the end of training. A checkpoint holds the averaged weights as its
``state_dict`` and the current ones as ``current_model_state``, as in Lightning."""

from __future__ import annotations

import itertools
from copy import deepcopy
from typing import Any

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_avg_fn

from fulmen.callbacks.base import Callback
from fulmen.utilities.model_helpers import is_overridden
from fulmen.utilities.rank_zero import rank_zero_info, rank_zero_warn

__all__ = ["EMAWeightAveraging", "WeightAveraging"]


class WeightAveraging(Callback):
    """Average the weights after each training step (override :meth:`should_update` to
    choose). ``device``: where the average lives (the module's device by default);
    ``use_buffers``: average the buffers too; other arguments go to ``AveragedModel``
    (``avg_fn``, ``multi_avg_fn``)."""

    def __init__(self, device: torch.device | str | int | None = None, use_buffers: bool = True,
                 **kwargs: Any) -> None:
        self._device = torch.device(device) if isinstance(device, str) else device
        self._use_buffers = use_buffers
        self._kwargs = kwargs
        self._average_model: AveragedModel | None = None
        self._latest_update_step = 0
        self._latest_update_epoch = -1

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        """Whether to update the average after the step ``step_idx`` or the epoch
        ``epoch_idx`` (zero-based; the other is None). Default: after every step."""
        return step_idx is not None

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage != "fit":
            return
        device = self._device or pl_module.device
        if is_overridden("configure_model", pl_module):
            rank_zero_warn("You're using the WeightAveraging callback with a model that overrides "
                           "the configure_model callback. WeightAveraging doesn't support "
                           "sharding model layers, so you may run out of memory.")
            pl_module.configure_model()
        pl_module.trainer = None  # the average copies the module, not the trainer
        try:
            self._average_model = AveragedModel(model=pl_module, device=device,
                                                use_buffers=self._use_buffers, **self._kwargs)
        finally:
            pl_module.trainer = trainer

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.global_step > self._latest_update_step and \
                self.should_update(step_idx=trainer.global_step - 1):
            assert self._average_model is not None
            self._average_model.update_parameters(pl_module)
            self._latest_update_step = trainer.global_step

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.current_epoch > self._latest_update_epoch and \
                self.should_update(epoch_idx=trainer.current_epoch):
            assert self._average_model is not None
            self._average_model.update_parameters(pl_module)
            self._latest_update_epoch = trainer.current_epoch

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        assert self._average_model is not None
        self._copy_average_to_current(pl_module)

    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if self._average_model is not None:
            self._swap_models(pl_module)

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self._average_model is not None:
            self._swap_models(pl_module)

    def state_dict(self) -> dict[str, Any]:
        return {"latest_update_step": self._latest_update_step}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._latest_update_step = state_dict["latest_update_step"]

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        if self._average_model is None:
            rank_zero_info("You're using the WeightAveraging callback, but saving a checkpoint "
                           "outside the 'fit' stage. The state of the WeightAveraging callback "
                           "won't be saved in the checkpoint. If training has finished, the "
                           "average model parameters will be saved to the state_dict in the "
                           "checkpoint.")
            return
        average_state = self._average_model.state_dict()
        checkpoint["current_model_state"] = checkpoint["state_dict"]
        checkpoint["state_dict"] = {name[len("module."):]: value
                                    for name, value in average_state.items()
                                    if name.startswith("module.")}
        checkpoint["averaging_state"] = {name: value for name, value in average_state.items()
                                         if not name.startswith("module.")}

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        if self._average_model is None:
            rank_zero_warn("You're using the WeightAveraging callback, but loading a checkpoint "
                           "outside the 'fit' stage. The WeightAveraging state cannot be "
                           "restored. If you're using the checkpoint for prediction or testing, "
                           "you can ignore this warning. To disable the warning, remove the "
                           "WeightAveraging callback.")
        elif "current_model_state" in checkpoint and "averaging_state" in checkpoint:
            rank_zero_info("Found current_model_state in the checkpoint. This will be used to "
                           "initialize the model.")
            average_state = {"module." + name: value
                             for name, value in checkpoint["state_dict"].items()}
            average_state |= checkpoint["averaging_state"]
            self._average_model.load_state_dict(average_state)
            pl_module.load_state_dict(checkpoint["current_model_state"])
        else:
            rank_zero_warn("The checkpoint was not created with WeightAveraging. Both the current "
                           "and the average model will be initialized with state_dict.")
            self._average_model.module.load_state_dict(deepcopy(checkpoint["state_dict"]),
                                                       strict=False)

    def _pairs(self, pl_module: Any) -> Any:
        assert self._average_model is not None
        average = self._average_model.module
        return zip(itertools.chain(average.parameters(), average.buffers()),
                   itertools.chain(pl_module.parameters(), pl_module.buffers()), strict=False)

    def _swap_models(self, pl_module: Any) -> None:
        """Swap the values of the module's parameters and buffers with the average's."""
        for average, current in self._pairs(pl_module):
            saved = average.data.clone()
            average.data.copy_(current.data)
            current.data.copy_(saved)

    def _copy_average_to_current(self, pl_module: Any) -> None:
        """Give the module the average's parameter and buffer values."""
        for average, current in self._pairs(pl_module):
            current.data.copy_(average.data)


class EMAWeightAveraging(WeightAveraging):
    """An exponential moving average of the weights (``decay``), updated every
    ``update_every_n_steps`` steps from ``update_starting_at_step`` on (and after each epoch
    from ``update_starting_at_epoch`` on, when given)."""

    def __init__(self, device: torch.device | str | int | None = None, use_buffers: bool = True,
                 decay: float = 0.999, update_every_n_steps: int = 1,
                 update_starting_at_step: int | None = None,
                 update_starting_at_epoch: int | None = None, **kwargs: Any) -> None:
        super().__init__(device=device, use_buffers=use_buffers, **kwargs,
                         avg_fn=get_ema_avg_fn(decay=decay))
        self.update_every_n_steps = update_every_n_steps
        self.update_starting_at_step = update_starting_at_step
        self.update_starting_at_epoch = update_starting_at_epoch

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        if step_idx is not None and (
                self.update_starting_at_step is None or step_idx >= self.update_starting_at_step
        ) and self.update_every_n_steps > 0 and step_idx % self.update_every_n_steps == 0:
            return True
        return epoch_idx is not None and self.update_starting_at_epoch is not None and \
            epoch_idx >= self.update_starting_at_epoch
