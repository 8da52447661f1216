"""``Trainer``: composes the plugins at construction and holds the training flags."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from fulmen.connector import SelectionReport, select
from fulmen.errors import ConfigurationError
from fulmen.legacy import translate_flag


class Trainer(SelectionReport):
    """Runs a ``fulmen.Module`` on whatever the selection arguments name.

    ``accelerator``, ``strategy``, ``precision``: ``"auto"`` (not precision), a registered name
    or alias, or an instance. ``devices``: see the accelerator's parsing (``2``, ``[0, 1]``,
    ``"1, 3"``, ``-1``, ``"auto"``). ``plugins``: ``ClusterEnvironment``/``Precision``/
    ``CheckpointIO`` instances or environment/precision names. Legacy ``gpus=``, ``tpu_cores=``,
    ``replace_sampler_ddp=``, ``accelerator="ddp"`` and ``precision=16`` are accepted with a
    ``FulmenDeprecationWarning`` that shows the current spelling.
    """

    def __init__(
        self,
        *,
        accelerator: Any = "auto",
        strategy: Any = "auto",
        devices: Any = "auto",
        num_nodes: int = 1,
        precision: Any = "32-true",
        plugins: Sequence[Any] | Any | None = None,
        logger: Any = True,
        callbacks: Sequence[Any] | Any | None = None,
        max_epochs: int | None = None,
        min_epochs: int | None = None,
        max_steps: int = -1,
        max_time: str | timedelta | dict[str, int] | None = None,
        limit_train_batches: int | float | None = None,
        limit_val_batches: int | float | None = None,
        limit_test_batches: int | float | None = None,
        limit_predict_batches: int | float | None = None,
        val_check_interval: int | float | None = None,
        check_val_every_n_epoch: int | None = 1,
        num_sanity_val_steps: int = 2,
        fast_dev_run: int | bool = False,
        accumulate_grad_batches: int = 1,
        gradient_clip_val: int | float | None = None,
        gradient_clip_algorithm: str | None = None,
        deterministic: bool | str | None = None,
        benchmark: bool | None = None,
        detect_anomaly: bool = False,
        log_every_n_steps: int = 50,
        enable_checkpointing: bool = True,
        enable_progress_bar: bool = True,
        enable_model_summary: bool = True,
        default_root_dir: str | None = None,
        use_distributed_sampler: bool = True,
        sync_batchnorm: bool = False,
        gpus: Any = None,
        tpu_cores: Any = None,
        replace_sampler_ddp: bool | None = None,
    ) -> None:
        self._selection = select("Trainer", accelerator=accelerator, strategy=strategy,
                                 devices=devices, num_nodes=num_nodes, precision=precision,
                                 plugins=plugins, gpus=gpus, tpu_cores=tpu_cores)
        self.use_distributed_sampler = translate_flag(
            "Trainer", "replace_sampler_ddp", "use_distributed_sampler", replace_sampler_ddp,
            use_distributed_sampler, True)
        for flag, value in (("max_epochs", max_epochs), ("min_epochs", min_epochs)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < -1):
                raise ConfigurationError(f"Trainer({flag}={value!r}): expected an int >= 0, "
                                         "-1 for no limit, or None")
        for flag, value in (("accumulate_grad_batches", accumulate_grad_batches),
                            ("log_every_n_steps", log_every_n_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"Trainer({flag}={value!r}): expected a positive int")
        self.logger_flag, self.callbacks_flag = logger, callbacks
        self.max_epochs, self.min_epochs, self.max_steps, self.max_time = (
            max_epochs, min_epochs, max_steps, max_time)
        self.limit_train_batches, self.limit_val_batches = limit_train_batches, limit_val_batches
        self.limit_test_batches = limit_test_batches
        self.limit_predict_batches = limit_predict_batches
        self.val_check_interval = val_check_interval
        self.check_val_every_n_epoch = check_val_every_n_epoch
        self.num_sanity_val_steps, self.fast_dev_run = num_sanity_val_steps, fast_dev_run
        self.accumulate_grad_batches = accumulate_grad_batches
        self.gradient_clip_val = gradient_clip_val
        self.gradient_clip_algorithm = gradient_clip_algorithm
        self.deterministic, self.benchmark = deterministic, benchmark
        self.detect_anomaly, self.log_every_n_steps = detect_anomaly, log_every_n_steps
        self.enable_checkpointing = enable_checkpointing
        self.enable_progress_bar = enable_progress_bar
        self.enable_model_summary = enable_model_summary
        self.default_root_dir = default_root_dir
        self.sync_batchnorm = sync_batchnorm

    @property
    def precision(self) -> str:
        """The canonical name of the precision in use (``"32-true"``, ``"bf16-mixed"``...)."""
        return self._selection.precision.name

    def __repr__(self) -> str:
        return (f"Trainer(accelerator={self.accelerator.name!r}, strategy={self.strategy.name!r}, "
                f"devices={self.device_ids}, num_nodes={self.num_nodes}, "
                f"precision={self.precision!r}, environment={self.cluster_environment.name!r})")
