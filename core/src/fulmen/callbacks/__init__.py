"""Callbacks shipped with fulmen. Each module imports only what it needs."""

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
