"""Callbacks shipped with fulmen. Each name is imported on first use, so a run imports the
callbacks it uses and no others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "Callback": "fulmen.callbacks.base",
    "ModelCheckpoint": "fulmen.callbacks.checkpoint",
    "DeviceStatsMonitor": "fulmen.callbacks.device_stats_monitor",
    "EarlyStopping": "fulmen.callbacks.early_stopping",
    "EarlyStoppingReason": "fulmen.callbacks.early_stopping",
    "BackboneFinetuning": "fulmen.callbacks.finetuning",
    "BaseFinetuning": "fulmen.callbacks.finetuning",
    "GradientAccumulationScheduler": "fulmen.callbacks.grad_accumulation",
    "LambdaCallback": "fulmen.callbacks.lambda_function",
    "LearningRateMonitor": "fulmen.callbacks.lr_monitor",
    "OnExceptionCheckpoint": "fulmen.callbacks.on_exception",
    "BasePredictionWriter": "fulmen.callbacks.prediction_writer",
    "PredictionWriter": "fulmen.callbacks.prediction_writer",
    "ProgressBar": "fulmen.callbacks.progress",
    "RichProgressBar": "fulmen.callbacks.rich_progress",
    "RichProgressBarTheme": "fulmen.callbacks.rich_progress",
    "ModelSummary": "fulmen.callbacks.summary",
    "RichModelSummary": "fulmen.callbacks.summary",
    "StochasticWeightAveraging": "fulmen.callbacks.swa",
    "ThroughputMonitor": "fulmen.callbacks.throughput_monitor",
    "Timer": "fulmen.callbacks.timer",
    "TQDMProgressBar": "fulmen.callbacks.tqdm_progress",
    "BatchSizeFinder": "fulmen.callbacks.tuning",
    "LearningRateFinder": "fulmen.callbacks.tuning",
}

__all__ = ["BasePredictionWriter", "Callback", "EarlyStopping", "EarlyStoppingReason",
           "ModelCheckpoint", "OnExceptionCheckpoint", "PredictionWriter", "Timer",
           # monitoring, progress bars and summaries
           "DeviceStatsMonitor", "LearningRateMonitor", "ModelSummary", "ProgressBar",
           "RichModelSummary", "RichProgressBar", "RichProgressBarTheme", "TQDMProgressBar",
           "ThroughputMonitor",
           # training callbacks and the tuner's callbacks
           "BackboneFinetuning", "BaseFinetuning", "BatchSizeFinder",
           "GradientAccumulationScheduler", "LambdaCallback", "LearningRateFinder",
           "StochasticWeightAveraging"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from fulmen.callbacks.base import Callback
    from fulmen.callbacks.checkpoint import ModelCheckpoint
    from fulmen.callbacks.device_stats_monitor import DeviceStatsMonitor
    from fulmen.callbacks.early_stopping import EarlyStopping, EarlyStoppingReason
    from fulmen.callbacks.finetuning import BackboneFinetuning, BaseFinetuning
    from fulmen.callbacks.grad_accumulation import GradientAccumulationScheduler
    from fulmen.callbacks.lambda_function import LambdaCallback
    from fulmen.callbacks.lr_monitor import LearningRateMonitor
    from fulmen.callbacks.on_exception import OnExceptionCheckpoint
    from fulmen.callbacks.prediction_writer import BasePredictionWriter, PredictionWriter
    from fulmen.callbacks.progress import ProgressBar
    from fulmen.callbacks.rich_progress import RichProgressBar, RichProgressBarTheme
    from fulmen.callbacks.summary import ModelSummary, RichModelSummary
    from fulmen.callbacks.swa import StochasticWeightAveraging
    from fulmen.callbacks.throughput_monitor import ThroughputMonitor
    from fulmen.callbacks.timer import Timer
    from fulmen.callbacks.tqdm_progress import TQDMProgressBar
    from fulmen.callbacks.tuning import BatchSizeFinder, LearningRateFinder
