"""Example third-party plugins for fulmen (see docs/writing-plugins.md)."""

from fulmen_examples.lab.environment import LabEnvironment
from fulmen_examples.local_sgd.strategy import LocalSGDStrategy
from fulmen_examples.scaled.precision import StaticScalePrecision

__all__ = ["LabEnvironment", "LocalSGDStrategy", "StaticScalePrecision"]
