"""``fulmen.tuner.Tuner``: find a learning rate or the largest batch size before training, as
Lightning's ``lightning.pytorch.tuner.Tuner``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fulmen.errors import ConfigurationError

if TYPE_CHECKING:
    from fulmen.tuner.lr_finder import LRFinder

__all__ = ["Tuner"]

_METHODS = ("fit", "validate", "test", "predict")


class Tuner:
    """``Tuner(trainer).lr_find(model)`` / ``.scale_batch_size(model)``: each runs the stage
    with the matching callback in front, stops after the search, and returns what was found
    (the module's attribute is updated too)."""

    def __init__(self, trainer: Any) -> None:
        self._trainer = trainer

    def scale_batch_size(self, model: Any, train_dataloaders: Any = None,
                         val_dataloaders: Any = None, dataloaders: Any = None,
                         datamodule: Any = None, method: str = "fit", mode: str = "power",
                         steps_per_trial: int = 3, init_val: int = 2, max_trials: int = 25,
                         batch_arg_name: str = "batch_size", margin: float = 0.05,
                         max_val: int = 8192) -> int | None:
        """The largest batch size that runs ``steps_per_trial`` steps of ``method`` without an
        out-of-memory error (see ``fulmen.callbacks.BatchSizeFinder``)."""
        from fulmen.callbacks.tuning import BatchSizeFinder

        _check_configuration(train_dataloaders, val_dataloaders, dataloaders, method)
        if any(isinstance(c, BatchSizeFinder) for c in self._trainer.callbacks):
            raise ConfigurationError("Trainer is already configured with a `BatchSizeFinder` "
                                     "callback. Please remove it if you want to use the Tuner.")
        finder = BatchSizeFinder(mode=mode, steps_per_trial=steps_per_trial, init_val=init_val,
                                 max_trials=max_trials, batch_arg_name=batch_arg_name,
                                 margin=margin, max_val=max_val)
        finder._early_exit = True
        self._run(finder, model, method, train_dataloaders, val_dataloaders, dataloaders,
                  datamodule)
        return finder.optimal_batch_size

    def lr_find(self, model: Any, train_dataloaders: Any = None, val_dataloaders: Any = None,
                dataloaders: Any = None, datamodule: Any = None, method: str = "fit",
                min_lr: float = 1e-8, max_lr: float = 1, num_training: int = 100,
                mode: str = "exponential", early_stop_threshold: float | None = 4.0,
                update_attr: bool = True, attr_name: str = "",
                weights_only: bool | None = None) -> LRFinder | None:
        """The learning-rate range test (see ``fulmen.callbacks.LearningRateFinder``); returns
        its results (``.suggestion()``, ``.plot()``)."""
        from fulmen.callbacks.tuning import LearningRateFinder

        if method != "fit":
            raise ConfigurationError(f"Tuner.lr_find(method={method!r}): method='fit' is the "
                                     "only valid configuration to run lr finder")
        _check_configuration(train_dataloaders, val_dataloaders, dataloaders, method)
        if any(isinstance(c, LearningRateFinder) for c in self._trainer.callbacks):
            raise ConfigurationError("Trainer is already configured with a `LearningRateFinder` "
                                     "callback. Please remove it if you want to use the Tuner.")
        finder = LearningRateFinder(min_lr=min_lr, max_lr=max_lr,
                                    num_training_steps=num_training, mode=mode,
                                    early_stop_threshold=early_stop_threshold,
                                    update_attr=update_attr, attr_name=attr_name,
                                    weights_only=weights_only)
        finder._early_exit = True
        self._run(finder, model, method, train_dataloaders, val_dataloaders, dataloaders,
                  datamodule)
        return finder.optimal_lr

    def _run(self, callback: Any, model: Any, method: str, train_dataloaders: Any,
             val_dataloaders: Any, dataloaders: Any, datamodule: Any) -> None:
        trainer = self._trainer
        trainer.callbacks = [callback, *trainer.callbacks]
        try:
            if method == "fit":
                trainer.fit(model, train_dataloaders, val_dataloaders, datamodule)
            else:
                getattr(trainer, method)(model, dataloaders, datamodule=datamodule)
        finally:
            trainer.callbacks = [c for c in trainer.callbacks if c is not callback]


def _check_configuration(train_dataloaders: Any, val_dataloaders: Any, dataloaders: Any,
                         method: str) -> None:
    if method not in _METHODS:
        raise ConfigurationError(f"method={method!r} is invalid; use one of {_METHODS}")
    if method == "fit":
        if dataloaders is not None:
            raise ConfigurationError(
                f"In tuner with method={method!r}, `dataloaders` argument should be None, please "
                "consider setting `train_dataloaders` and `val_dataloaders` instead.")
    elif train_dataloaders is not None or val_dataloaders is not None:
        raise ConfigurationError(
            f"In tuner with `method`={method!r}, `train_dataloaders` and `val_dataloaders` "
            "arguments should be None, please consider setting `dataloaders` instead.")
