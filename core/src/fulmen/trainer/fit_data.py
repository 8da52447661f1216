"""The fit's dataloaders, requested when Lightning requests them: the validation loaders at the
sanity check (or when fit starts on an epoch that validates, or at the first validation), the
training loader when the epochs start, and both again every
``Trainer(reload_dataloaders_every_n_epochs=n)`` epochs (Lightning 2.6's rules, including a
sanity check's load counting for the first epoch only when that epoch validates)."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from fulmen.errors import ConfigurationError
from fulmen.trainer import data

if TYPE_CHECKING:
    from fulmen.trainer.evaluation_loop import EvaluationLoop, Loaders
    from fulmen.trainer.loop_host import LoopHost

_NO_TRAIN_DATA = ("trainer.fit found no training data: pass train_dataloaders=, a datamodule "
                  "with train_dataloader(), or define train_dataloader() on the module")


class FitData:
    """One fit's training and validation dataloaders (one per :meth:`FitLoop.run`, so a
    tuner's trial inside the fit keeps its own)."""

    def __init__(self, trainer: LoopHost, validation: EvaluationLoop,
                 explicit: dict[str, Any]) -> None:
        self.trainer, self.validation, self.explicit = trainer, validation, explicit
        self.train: Any = None
        #: batches per epoch of :attr:`train` under ``limit_train_batches``
        self.n_batches: int | float = 0
        #: validate every this many training batches; None: no validation in this fit
        self.val_every: int | float | None = None
        self._val: Loaders | None = None
        self._train_epoch: float = -math.inf  # when each was last requested
        self._val_epoch: float = -math.inf
        module = trainer.module
        if not data.defined(explicit.get("train"), trainer.datamodule, module, "train"):
            raise ConfigurationError(_NO_TRAIN_DATA)
        #: validation runs in this fit (Lightning's ``trainer.enable_validation``): a
        #: ``validation_step``, ``limit_val_batches`` > 0 and validation data somewhere
        self.validates = bool(
            trainer.limit_val_batches != 0 and validation.step_defined("val")
            and data.defined(explicit.get("val"), trainer.datamodule, module, "val"))

    def _due(self, last: float) -> bool:
        n = self.trainer.reload_dataloaders_every_n_epochs
        return bool(n) and self.trainer.current_epoch - last >= n

    @property
    def train_due(self) -> bool:
        """The training loader is to be requested (again) before this epoch."""
        return self.train is None or self._due(self._train_epoch)

    def epoch_validates(self) -> bool:
        """The running epoch validates (``check_val_every_n_epoch``)."""
        every = self.trainer.check_val_every_n_epoch
        return self.validates and (every is None or (self.trainer.current_epoch + 1) % every == 0)

    def setup_train(self) -> None:
        """Request the training loader (again), count its batches (warning, as Lightning, when
        an epoch is shorter than ``log_every_n_steps``), set the validation interval."""
        trainer = self.trainer
        strategy = trainer.strategy
        train_loaders = data.resolve(self.explicit.get("train"), trainer.datamodule,
                                     trainer.module, "train")
        if not train_loaders:
            raise ConfigurationError(_NO_TRAIN_DATA)
        named = len(train_loaders) == 1 and isinstance(train_loaders[0], Mapping)
        several: dict[Any, Any] = dict(train_loaders[0]) if named else \
            dict(enumerate(train_loaders))
        for key, loader in several.items():
            if trainer.overfit_batches:
                loader = data.without_shuffle(loader)
            self._check_reloadable(loader, "train")
            loader = strategy.process_dataloader(loader, "train", trainer.use_distributed_sampler)
            data.seed_workers(loader, trainer.global_rank)
            several[key] = loader
        if len(several) == 1 and not named:
            train: Any = several[0]
        else:  # Lightning's CombinedLoader(mode="max_size_cycle")
            train = MaxSizeCycle(several if named else list(several.values()))
        n_batches = data.num_batches(train, trainer.limit_train_batches, "train")
        trainer.num_training_batches = n_batches
        if n_batches == 0 and trainer.limit_train_batches != 0:
            warnings.warn(data.EMPTY_LOADERS + " (the training dataloader has 0 batches: "
                          "nothing is trained; check the dataset length, batch_size and "
                          "drop_last)", stacklevel=5)  # Lightning's, then no training batch
        self.train, self.n_batches = train, n_batches
        trainer.run_state.dataloaders["train"] = [train.iterables if isinstance(
            train, MaxSizeCycle) else train]
        if trainer.loggers and n_batches < trainer.log_every_n_steps and \
                not trainer.fast_dev_run:
            warnings.warn(  # Lightning's
                f"The number of training batches ({n_batches}) is smaller than the logging "
                f"interval Trainer(log_every_n_steps={trainer.log_every_n_steps}). Set a lower "
                "value for log_every_n_steps if you want to see logs for the training epoch.",
                stacklevel=4)
        if n_batches:
            self._train_epoch = trainer.current_epoch
        if trainer.val_check_time_interval is not None:  # validation by the clock
            trainer.run_state.last_val_time = time.monotonic()
            self.val_every = math.inf if self.validates and n_batches else None
        else:
            self.val_every = val_interval(trainer, n_batches) if self.validates and n_batches \
                else None

    def val(self, sanity: bool = False) -> Loaders:
        """The validation loaders and their batch counts, requested on first use and again when
        ``reload_dataloaders_every_n_epochs`` says so."""
        trainer = self.trainer
        if self._val is not None and not self._due(self._val_epoch):
            return self._val
        if not sanity or self.epoch_validates():
            self._val_epoch = trainer.current_epoch
        self._val = self.validation.loaders("val", self.explicit.get("val"), during_fit=True)
        for loader in self._val[0]:
            self._check_reloadable(loader, "val")
        return self._val

    @property
    def val_loaded(self) -> bool:
        return self._val is not None

    def _check_reloadable(self, loader: Any, kind: str) -> None:
        if self.trainer.reload_dataloaders_every_n_epochs and \
                getattr(loader, "persistent_workers", False) and \
                getattr(loader, "pin_memory", False):
            warnings.warn(  # Lightning's warning, word for word
                "The combination of `DataLoader(`pin_memory=True`, `persistent_workers=True`) "
                "and `Trainer(reload_dataloaders_every_n_epochs > 0)` can lead to instability "
                "due to limitations in PyTorch (https://github.com/pytorch/pytorch/issues/91252)."
                f" We recommend setting `pin_memory=False` in this case (the {kind} "
                "dataloader).", stacklevel=4)


class MaxSizeCycle:
    """Several training dataloaders as one, as Lightning combines a list or dict of them
    (``CombinedLoader(mode="max_size_cycle")``): each batch is a list (a dict) holding a batch
    of every loader; the epoch lasts as long as the longest loader, and a shorter one starts
    over when it runs out. Only a loader of unknown length ends the epoch by running out (once
    every loader has run out at least once)."""

    def __init__(self, iterables: list[Any] | dict[Any, Any]) -> None:
        #: the loaders, as given (``trainer.train_dataloader``)
        self.iterables = iterables

    def _items(self) -> list[tuple[Any, Any]]:
        items = self.iterables.items() if isinstance(self.iterables, dict) else \
            enumerate(self.iterables)
        return list(items)

    def __len__(self) -> int:
        lengths = [len(loader) for _, loader in self._items()]  # TypeError: unknown length
        return max(lengths)

    def set_epoch(self, epoch: int) -> None:
        from fulmen.trainer.batches import set_epoch

        for _, loader in self._items():
            set_epoch(loader, epoch)

    def __iter__(self) -> Iterator[Any]:
        items = self._items()
        iterators = {key: iter(loader) for key, loader in items}
        done = dict.fromkeys(iterators, False)
        try:
            total: int | None = len(self)
        except TypeError:
            total = None
        produced = 0
        while total is None or produced < total:
            batch = {}
            for key, loader in items:
                try:
                    batch[key] = next(iterators[key])
                except StopIteration:
                    done[key] = True
                    if total is None and all(done.values()):
                        return
                    iterators[key] = iter(loader)
                    try:
                        batch[key] = next(iterators[key])
                    except StopIteration:
                        return  # an empty loader: nothing to combine
            produced += 1
            yield batch if isinstance(self.iterables, dict) else list(batch.values())


def val_interval(trainer: LoopHost, n_batches: int | float) -> int | float:
    """Validate every this many training batches (``val_check_interval`` for ``n_batches``)."""
    interval = trainer.val_check_interval
    if interval is None or (isinstance(interval, float) and interval == 1.0):
        return n_batches  # 1.0: the whole epoch; the int 1 means every batch (Lightning)
    if isinstance(interval, float):
        if n_batches == math.inf:
            raise ConfigurationError(f"val_check_interval={interval} is a fraction of the "
                                     "epoch, but the training dataloader has no length; give a "
                                     "number of batches")
        return max(1, int(n_batches * interval))
    if interval > n_batches and trainer.check_val_every_n_epoch is not None:
        raise ConfigurationError(
            f"val_check_interval={interval} is larger than the epoch ({n_batches} training "
            "batches). Use a value <= the number of batches, a fraction like 0.5, or "
            "check_val_every_n_epoch=None to count batches across epochs")
    return interval
