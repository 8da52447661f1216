"""Callbacks shipped with fulmen. Each module imports only what it needs."""

from fulmen.callbacks.base import Callback
from fulmen.callbacks.checkpoint import ModelCheckpoint
from fulmen.callbacks.early_stopping import EarlyStopping
from fulmen.callbacks.lr_monitor import LearningRateMonitor
from fulmen.callbacks.prediction_writer import BasePredictionWriter, PredictionWriter
from fulmen.callbacks.progress import ProgressBar, TQDMProgressBar
from fulmen.callbacks.summary import ModelSummary

__all__ = ["BasePredictionWriter", "Callback", "EarlyStopping", "LearningRateMonitor",
           "ModelCheckpoint", "ModelSummary", "PredictionWriter", "ProgressBar", "TQDMProgressBar"]
