"""``StageHost``: what running a stage (set-up, restore, the loop, teardown), saving and
restoring checkpoints, and a tuner's trial read from the Trainer.

:func:`~fulmen.trainer.stage.run_stage`, :mod:`fulmen.trainer.save_restore` and
:func:`fulmen.tuner.trial.run_trial` drive the Trainer's loops and plugins; typed against this
protocol rather than the ``Trainer`` class, they never import the module that imports them.
Every member is a public member of ``fulmen.Trainer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fulmen.trainer.loop_host import LoopHost

if TYPE_CHECKING:
    from fulmen.api.accelerator import Accelerator
    from fulmen.api.logger import Logger
    from fulmen.api.precision import Precision
    from fulmen.callbacks.base import Callback
    from fulmen.profilers import Profiler
    from fulmen.trainer.evaluation_loop import EvaluationLoop
    from fulmen.trainer.fit_loop import FitLoop
    from fulmen.trainer.predict_loop import PredictionLoop


class StageHost(LoopHost, Protocol):
    """The Trainer as a stage sees it: :class:`~fulmen.trainer.loop_host.LoopHost`, the loops,
    the callbacks and loggers, and the flags a stage's set-up reads."""

    fit_loop: FitLoop
    evaluation_loop: EvaluationLoop
    predict_loop: PredictionLoop
    callbacks: list[Callback]
    profiler: Profiler
    #: ids of the modules compiled in place already
    compiled_modules: set[int]
    sync_batchnorm: bool
    enable_autolog_hparams: bool

    @property
    def loggers(self) -> list[Logger]:
        ...

    @loggers.setter
    def loggers(self, loggers: list[Logger]) -> None:
        ...

    @property
    def checkpoint_callback(self) -> Any:
        ...

    @property
    def checkpoint_callbacks(self) -> list[Any]:
        ...

    @property
    def accelerator(self) -> Accelerator:
        ...

    @property
    def precision_plugin(self) -> Precision:
        ...

    @property
    def device_ids(self) -> list[int]:
        ...

    @property
    def num_devices(self) -> int:
        ...

    @property
    def num_nodes(self) -> int:
        ...

    @property
    def precision(self) -> str:
        ...
