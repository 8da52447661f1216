"""Callbacks shipped with fulmen. Each module imports only what it needs."""

from fulmen.callbacks.base import Callback
from fulmen.callbacks.checkpoint import ModelCheckpoint
from fulmen.callbacks.early_stopping import EarlyStopping, EarlyStoppingReason
from fulmen.callbacks.finetuning import BackboneFinetuning, BaseFinetuning
from fulmen.callbacks.grad_accumulation import GradientAccumulationScheduler
from fulmen.callbacks.lambda_function import LambdaCallback
from fulmen.callbacks.lr_monitor import LearningRateMonitor
from fulmen.callbacks.on_exception import OnExceptionCheckpoint
from fulmen.callbacks.prediction_writer import BasePredictionWriter, PredictionWriter
from fulmen.callbacks.progress import ProgressBar, TQDMProgressBar
from fulmen.callbacks.summary import ModelSummary
from fulmen.callbacks.swa import StochasticWeightAveraging
from fulmen.callbacks.timer import Timer
from fulmen.callbacks.tuning import BatchSizeFinder, LearningRateFinder

__all__ = ["BasePredictionWriter", "Callback", "EarlyStopping", "EarlyStoppingReason",
           "LearningRateMonitor", "ModelCheckpoint", "ModelSummary", "OnExceptionCheckpoint",
           "PredictionWriter", "ProgressBar", "TQDMProgressBar", "Timer",
           # training callbacks and the tuner's callbacks (issue 17)
           "BackboneFinetuning", "BaseFinetuning", "BatchSizeFinder",
           "GradientAccumulationScheduler", "LambdaCallback", "LearningRateFinder",
           "StochasticWeightAveraging"]
