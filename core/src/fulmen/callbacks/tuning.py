"""``LearningRateFinder`` and ``BatchSizeFinder``: the tuner's searches as callbacks, run at
the start of the stage (fit, or validate/test/predict for the batch size) as trials that
leave nothing behind but the value found."""

from __future__ import annotations

import warnings
from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError, StageExit
from fulmen.seed import isolate_rng


class LearningRateFinder(Callback):
    """Run the learning-rate range test when fit starts; with ``update_attr`` the suggestion
    is written to the module's ``lr``/``learning_rate`` (or ``attr_name``) and the optimizer.

    The results are in ``optimal_lr`` (``optimal_lr.suggestion()``, ``optimal_lr.results``).
    Override ``on_fit_start`` and call ``self.lr_find(trainer, module)`` from another hook to
    search again later (e.g. at some epochs).
    """

    SUPPORTED_MODES = ("linear", "exponential")

    def __init__(self, min_lr: float = 1e-8, max_lr: float = 1, num_training_steps: int = 100,
                 mode: str = "exponential", early_stop_threshold: float | None = 4.0,
                 update_attr: bool = True, attr_name: str = "",
                 weights_only: bool | None = None) -> None:
        from fulmen.tuner.lr_finder import check_arguments

        mode = mode.lower() if isinstance(mode, str) else mode
        check_arguments(min_lr, max_lr, num_training_steps, mode, early_stop_threshold)
        self._min_lr, self._max_lr = min_lr, max_lr
        self._num_training_steps = num_training_steps
        self._mode = mode
        self._early_stop_threshold = early_stop_threshold
        self._update_attr = update_attr
        self._attr_name = attr_name
        self._weights_only = weights_only  # accepted for Lightning; nothing is saved to a file
        self._early_exit = False
        self.optimal_lr: Any = None

    def lr_find(self, trainer: Any, pl_module: Any) -> None:
        from fulmen.tuner.lr_finder import lr_find

        with isolate_rng():
            self.optimal_lr = lr_find(
                trainer, pl_module, min_lr=self._min_lr, max_lr=self._max_lr,
                num_training=self._num_training_steps, mode=self._mode,
                early_stop_threshold=self._early_stop_threshold, update_attr=self._update_attr,
                attr_name=self._attr_name)
        if self._early_exit:
            raise StageExit()

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self.lr_find(trainer, module)


class BatchSizeFinder(Callback):
    """Find the largest batch size that runs without an out-of-memory error when the stage
    starts, and continue with it (``optimal_batch_size``).

    ``mode``: ``"power"`` (double until out of memory) or ``"binsearch"`` (then bisect, and
    reduce the result by ``margin``). ``steps_per_trial`` steps per size, from ``init_val``, at
    most ``max_trials`` sizes, never above ``max_val``. The size lives in ``batch_arg_name`` on
    the module, its hparams or the datamodule, which the ``*_dataloader()`` methods read. One
    process only.
    """

    SUPPORTED_MODES = ("power", "binsearch")

    def __init__(self, mode: str = "power", steps_per_trial: int = 3, init_val: int = 2,
                 max_trials: int = 25, batch_arg_name: str = "batch_size", margin: float = 0.05,
                 max_val: int = 8192) -> None:
        from fulmen.tuner.batch_size_scaling import check_arguments

        mode = mode.lower() if isinstance(mode, str) else mode
        check_arguments(mode, steps_per_trial, init_val, max_trials, margin, max_val,
                        owner="BatchSizeFinder")
        self.optimal_batch_size: int | None = init_val
        self._mode = mode
        self._steps_per_trial = steps_per_trial
        self._init_val = init_val
        self._max_trials = max_trials
        self._batch_arg_name = batch_arg_name
        self._margin = margin
        self._max_val = max_val
        self._early_exit = False

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        from fulmen.tuner import attributes

        if trainer.world_size > 1:
            raise ConfigurationError(
                f"The Batch size finder is not supported with distributed strategies (strategy "
                f"{trainer.strategy.name!r}, {trainer.world_size} processes): find the size on "
                "one device, then train with it")
        if not trainer.dataloaders_from_module:
            raise ConfigurationError(
                f"The Batch size finder cannot be used with dataloaders passed directly to "
                f"`.{stage}()`: the new size could not reach them. Build the dataloader in the "
                f"module's or datamodule's *_dataloader() from self.{self._batch_arg_name}")
        if not attributes.has(module, trainer.datamodule, self._batch_arg_name):
            raise ConfigurationError(attributes.where_missing(self._batch_arg_name))
        if self._batch_arg_name in vars(module) and \
                self._batch_arg_name in getattr(module, "hparams", {}):
            warnings.warn(
                f"Field `model.{self._batch_arg_name}` and `model.hparams.{self._batch_arg_name}`"
                f" are mutually exclusive! `model.{self._batch_arg_name}` will be used as the "
                "initial batch size for scaling. If this is not the intended behavior, please "
                "remove either one.", stacklevel=2)

    def scale_batch_size(self, trainer: Any, pl_module: Any) -> None:
        from fulmen.tuner.batch_size_scaling import scale_batch_size

        self.optimal_batch_size = scale_batch_size(
            trainer, self._mode, self._steps_per_trial, self._init_val, self._max_trials,
            self._batch_arg_name, self._margin, self._max_val)
        if self._early_exit:
            raise StageExit()

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self.scale_batch_size(trainer, module)

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        if trainer.sanity_checking or trainer.state.fn != "validate":
            return
        self.scale_batch_size(trainer, module)

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self.scale_batch_size(trainer, module)

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self.scale_batch_size(trainer, module)
