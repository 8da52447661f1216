"""``LoopHost``: what the loops (fit, epoch, step, evaluation, predict) read from the Trainer.

The loops are created by the Trainer and run inside its stage; they read its run flags (checked
once by :class:`~fulmen.trainer.config.TrainerConfig`), its parts (``metrics``,
``optimization``) and its counters, and write the counters and stop flags Lightning users read
on the Trainer (``current_epoch``, ``global_step``, ``should_stop``, ``num_training_batches``...).
Typed against this protocol rather than the ``Trainer`` class, the loops never import the module
that imports them. Every member is a public member of ``fulmen.Trainer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fulmen.trainer.host import TrainerHost

if TYPE_CHECKING:
    from fulmen.trainer.metrics import Metrics
    from fulmen.trainer.optimization import Optimization


class LoopHost(TrainerHost, Protocol):
    """The Trainer as its loops see it: :class:`~fulmen.trainer.host.TrainerHost`, the run
    flags, the parts and the counters below."""

    metrics: Metrics
    optimization: Optimization
    # run flags (Trainer arguments, checked once; a tuner's trial changes some for its run)
    max_epochs: int
    min_epochs: int
    max_steps: int
    min_steps: int
    max_time: float | None
    limit_train_batches: int | float | None
    limit_val_batches: int | float | None
    limit_predict_batches: int | float | None
    overfit_batches: int | float
    val_check_interval: int | float | None
    #: ``val_check_interval`` given as a duration, in seconds (validation by the clock)
    val_check_time_interval: float | None
    check_val_every_n_epoch: int | None
    num_sanity_val_steps: int
    accumulate_grad_batches: int
    detect_anomaly: bool
    log_every_n_steps: int
    use_distributed_sampler: bool
    compile_options: dict[str, Any] | None
    fast_dev_run: int
    reload_dataloaders_every_n_epochs: int
    barebones: bool
    # what the loops write
    should_stop: bool
    #: the coming epoch runs ``training_step`` only (``StochasticWeightAveraging``)
    skip_backward: bool
    #: Lightning's stage flags (``state.stage``): the loops switch between training,
    #: validation and the sanity check inside fit
    sanity_checking: bool
    training: bool
    validating: bool
    num_training_batches: int | float
    num_val_batches: list[int | float]
    num_sanity_val_batches: list[int | float]
    num_test_batches: list[int | float]
    num_predict_batches: list[int | float]
