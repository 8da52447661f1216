"""The installed fulmen's version, in a module of its own: what checkpoints and banners record
without importing the package's lazy exports."""

__version__ = "0.1.0"
