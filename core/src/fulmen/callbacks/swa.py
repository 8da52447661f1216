"""``StochasticWeightAveraging``: average the weights of the last epochs (Izmailov et al.,
UAI 2018), following ``torch.optim.swa_utils``."""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from typing import Any, Literal

import torch
from torch import Tensor, nn

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_info, rank_zero_warn

AvgFn = Callable[[Tensor, Tensor, Tensor], Tensor]


class StochasticWeightAveraging(Callback):
    """Keep a running average of the weights from ``swa_epoch_start`` on, with ``SWALR``
    annealing the learning rate to ``swa_lrs``; the module ends training with the averaged
    weights.

    ``swa_lrs``: one float, or one per parameter group. ``swa_epoch_start``: an epoch (int >= 1,
    one-based as in Lightning) or a fraction of ``max_epochs``. ``annealing_epochs``,
    ``annealing_strategy`` (``"cos"``/``"linear"``): passed to ``SWALR``. ``avg_fn``:
    ``(averaged, current, n_averaged) -> new average`` (default: equal weights). ``device``:
    where the averaged copy lives (None: the module's device).

    A module with batch-norm layers gets one extra epoch after ``max_epochs`` that runs the
    training batches forward only (``trainer.skip_backward``) to recompute their statistics for
    the averaged weights. One optimizer, at most one scheduler (replaced by ``SWALR``).
    """

    def __init__(self, swa_lrs: float | list[float], swa_epoch_start: int | float = 0.8,
                 annealing_epochs: int = 10,
                 annealing_strategy: Literal["cos", "linear"] = "cos",
                 avg_fn: AvgFn | None = None,
                 device: torch.device | str | None = "cpu") -> None:
        given = (f"StochasticWeightAveraging(swa_lrs={swa_lrs!r}, "
                 f"swa_epoch_start={swa_epoch_start!r})")
        if isinstance(swa_epoch_start, bool) or not isinstance(swa_epoch_start, int | float) or (
                isinstance(swa_epoch_start, int) and swa_epoch_start < 1) or (
                isinstance(swa_epoch_start, float) and not 0 <= swa_epoch_start <= 1):
            raise ConfigurationError(f"{given}: swa_epoch_start should be a >0 integer or a float "
                                     "between 0 and 1 (a fraction of max_epochs)")
        wrong_float = isinstance(swa_lrs, float) and swa_lrs <= 0
        wrong_list = isinstance(swa_lrs, list) and not all(
            isinstance(lr, float) and lr > 0 for lr in swa_lrs)
        if not isinstance(swa_lrs, float | list) or wrong_float or wrong_list:
            raise ConfigurationError(f"{given}: The `swa_lrs` should a positive float, or a list "
                                     "of positive floats (one per parameter group)")
        if annealing_strategy not in ("cos", "linear"):
            raise ConfigurationError(f"StochasticWeightAveraging(annealing_strategy="
                                     f"{annealing_strategy!r}): use 'cos' or 'linear'")
        if avg_fn is not None and not callable(avg_fn):
            raise ConfigurationError(f"StochasticWeightAveraging(avg_fn={avg_fn!r}): The `avg_fn`"
                                     " should be callable (averaged, current, n_averaged)")
        if device is not None and not isinstance(device, torch.device | str):
            raise ConfigurationError(f"StochasticWeightAveraging(device={device!r}): device is "
                                     "expected to be a torch.device or a str")
        self.n_averaged: Tensor | None = None
        self._swa_epoch_start = swa_epoch_start
        self._swa_lrs = swa_lrs
        self._annealing_epochs = annealing_epochs
        self._annealing_strategy = annealing_strategy
        self._avg_fn = avg_fn or self.avg_fn
        self._device = device
        self._model_contains_batch_norm: bool | None = None
        self._average_model: nn.Module | None = None
        self._initialized = False
        self._swa_scheduler: Any = None
        self._scheduler_state: dict[str, Any] | None = None
        self._init_n_averaged = 0
        self._latest_update_epoch = -1
        self.momenta: dict[nn.modules.batchnorm._BatchNorm, float | None] = {}
        self._max_epochs: int = -1

    @property
    def swa_start(self) -> int:
        """The first averaged epoch, zero-based."""
        assert isinstance(self._swa_epoch_start, int)
        return max(self._swa_epoch_start - 1, 0)

    @property
    def swa_end(self) -> int | float:
        """The last averaged epoch, zero-based (infinite when ``max_epochs=-1``)."""
        return float("inf") if self._max_epochs == -1 else self._max_epochs - 1

    @staticmethod
    def pl_module_contains_batch_norm(pl_module: nn.Module) -> bool:
        return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in pl_module.modules())

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if trainer.strategy.shards_parameters:
            raise ConfigurationError(
                f"SWA does not currently support sharded models (strategy "
                f"{trainer.strategy.name!r}): use ddp or single_device, or remove "
                "StochasticWeightAveraging")
        # The copy is taken before the strategy moves or wraps the module, without the trainer.
        module.trainer = None
        try:
            self._average_model = deepcopy(module)
        finally:
            module.trainer = trainer

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if len(trainer.optimizers) != 1:
            raise ConfigurationError(f"StochasticWeightAveraging works with 1 optimizer; "
                                     f"configure_optimizers returned {len(trainer.optimizers)}")
        if len(trainer.lr_scheduler_configs) > 1:
            raise ConfigurationError(
                f"StochasticWeightAveraging supports at most 1 lr scheduler; configure_optimizers"
                f" returned {len(trainer.lr_scheduler_configs)}")
        if isinstance(self._swa_epoch_start, float):
            if trainer.max_epochs == -1:
                raise ConfigurationError(
                    f"StochasticWeightAveraging(swa_epoch_start={self._swa_epoch_start}) with "
                    "`swa_epoch_start` as a float is not supported when `max_epochs=-1`: give an "
                    "integer epoch")
            self._swa_epoch_start = int(trainer.max_epochs * self._swa_epoch_start)
        self._model_contains_batch_norm = self.pl_module_contains_batch_norm(module)
        self._max_epochs = trainer.max_epochs
        if self._model_contains_batch_norm and trainer.max_epochs != -1:
            trainer.max_epochs += 1  # one more epoch recomputes the batch-norm statistics

    def on_load_checkpoint(self, trainer: Any, module: Any, checkpoint: dict[str, Any]) -> None:
        if self._scheduler_state is not None and trainer.lr_scheduler_configs:
            # The checkpoint holds SWALR's state, not the user's scheduler's: drop the user's so
            # nothing loads into the wrong scheduler; SWALR comes back at the next epoch start.
            trainer.lr_scheduler_configs.clear()

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        epoch = trainer.current_epoch
        if not self._initialized and self.swa_start <= epoch <= self.swa_end:
            self._initialize(trainer, module)
        if self.swa_start <= epoch <= self.swa_end and epoch > self._latest_update_epoch:
            assert self.n_averaged is not None and self._average_model is not None
            self.update_parameters(self._average_model, module, self.n_averaged, self._avg_fn)
            self._latest_update_epoch = epoch
        if self._max_epochs != -1 and epoch == self.swa_end + 1:
            assert self._average_model is not None
            self.transfer_weights(self._average_model, module)
            self.reset_batch_norm_and_save_state(module)
            trainer.skip_backward = True  # forward passes only: batch-norm statistics

    def _initialize(self, trainer: Any, module: Any) -> None:
        from torch.optim.swa_utils import SWALR

        from fulmen.trainer.optim import LRSchedulerConfig

        self._initialized = True
        assert self._average_model is not None
        self._average_model = self._average_model.to(self._device or module.device)
        optimizer = trainer.optimizers[0]
        if isinstance(self._swa_lrs, float):
            self._swa_lrs = [self._swa_lrs] * len(optimizer.param_groups)
        for lr, group in zip(self._swa_lrs, optimizer.param_groups):
            group["initial_lr"] = lr
        self._swa_scheduler = SWALR(
            optimizer, swa_lr=self._swa_lrs,  # type: ignore[arg-type]  # a list works
            anneal_epochs=self._annealing_epochs,
            anneal_strategy=self._annealing_strategy,
            last_epoch=trainer.max_epochs if self._annealing_strategy == "cos" else -1)
        if self._scheduler_state is not None:
            self._swa_scheduler.load_state_dict(self._scheduler_state)
        elif trainer.current_epoch != self.swa_start:
            rank_zero_warn("SWA is initializing after swa_start without any checkpoint data; "
                           "the learning rate schedule differs from an uninterrupted run")
        config = LRSchedulerConfig(self._swa_scheduler)
        configs = trainer.lr_scheduler_configs
        if configs:
            if configs[0].interval != "epoch" or configs[0].frequency != 1:
                rank_zero_warn(f"SWA is currently only supported every epoch. Found {configs[0]}")
            rank_zero_info(f"Swapping scheduler `{type(configs[0].scheduler).__name__}` for "
                           f"`{type(self._swa_scheduler).__name__}`")
            configs[0] = config
        else:
            configs.append(config)
        if self.n_averaged is None:
            self.n_averaged = torch.tensor(self._init_n_averaged, dtype=torch.long,
                                           device=module.device)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        trainer.skip_backward = False

    def on_train_end(self, trainer: Any, module: Any) -> None:
        # current_epoch has moved past the last epoch by now
        if self._model_contains_batch_norm and self._max_epochs != -1 and \
                trainer.current_epoch - 1 == self.swa_end + 1:
            trainer.max_epochs -= 1  # the batch-norm epoch is over
            self.reset_momenta()
        elif (trainer.current_epoch - 1 == self.swa_end or self._max_epochs == -1) and \
                self._average_model is not None:
            self.transfer_weights(self._average_model, module)

    @staticmethod
    def transfer_weights(src_pl_module: nn.Module, dst_pl_module: nn.Module) -> None:
        for src_param, dst_param in zip(src_pl_module.parameters(), dst_pl_module.parameters()):
            dst_param.detach().copy_(src_param.to(dst_param.device))

    def reset_batch_norm_and_save_state(self, pl_module: nn.Module) -> None:
        """Fresh running statistics, cumulative (momentum None), as ``swa_utils.update_bn``."""
        self.momenta = {}
        for module in pl_module.modules():
            if not isinstance(module, nn.modules.batchnorm._BatchNorm):
                continue
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean = torch.zeros_like(module.running_mean)
            module.running_var = torch.ones_like(module.running_var)
            self.momenta[module] = module.momentum
            module.momentum = None
            assert module.num_batches_tracked is not None
            module.num_batches_tracked *= 0

    def reset_momenta(self) -> None:
        for bn_module, momentum in self.momenta.items():
            bn_module.momentum = momentum

    @staticmethod
    def update_parameters(average_model: nn.Module, model: nn.Module, n_averaged: Tensor,
                          avg_fn: AvgFn) -> None:
        for p_swa, p_model in zip(average_model.parameters(), model.parameters()):
            device = p_swa.device
            p_swa_ = p_swa.detach()
            p_model_ = p_model.detach().to(device)
            src = p_model_ if n_averaged == 0 else avg_fn(p_swa_, p_model_, n_averaged.to(device))
            p_swa_.copy_(src)
        n_averaged += 1

    @staticmethod
    def avg_fn(averaged_model_parameter: Tensor, model_parameter: Tensor,
               num_averaged: Tensor) -> Tensor:
        return averaged_model_parameter + \
            (model_parameter - averaged_model_parameter) / (num_averaged + 1)

    def state_dict(self) -> dict[str, Any]:
        return {
            "n_averaged": 0 if self.n_averaged is None else self.n_averaged.item(),
            "latest_update_epoch": self._latest_update_epoch,
            "scheduler_state": None if self._swa_scheduler is None
            else self._swa_scheduler.state_dict(),
            "average_model_state": None if self._average_model is None
            else self._average_model.state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._init_n_averaged = state_dict["n_averaged"]
        self._latest_update_epoch = state_dict["latest_update_epoch"]
        self._scheduler_state = state_dict["scheduler_state"]
        if self._average_model is not None and state_dict["average_model_state"] is not None:
            self._average_model.load_state_dict(state_dict["average_model_state"])
