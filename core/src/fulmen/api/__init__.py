"""Base classes that plugins implement. The user-facing framework is written only against these."""

from fulmen.api.accelerator import Accelerator
from fulmen.api.async_checkpoint_io import AsyncCheckpointIO
from fulmen.api.checkpoint_io import CheckpointIO, TorchCheckpointIO
from fulmen.api.environment import ClusterEnvironment
from fulmen.api.launcher import Launcher, LaunchOwner
from fulmen.api.logger import Logger
from fulmen.api.naming import as_messages
from fulmen.api.notice import Notice, PreemptionNotice
from fulmen.api.precision import Precision
from fulmen.api.run_config import RunConfig
from fulmen.api.strategy import Strategy

__all__ = ["Accelerator", "AsyncCheckpointIO", "CheckpointIO", "ClusterEnvironment",
           "LaunchOwner", "Launcher", "Logger", "Notice", "Precision", "PreemptionNotice",
           "RunConfig", "Strategy", "TorchCheckpointIO", "as_messages"]
