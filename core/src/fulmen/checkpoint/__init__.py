"""Checkpoint files: safe loading, atomic writing, manifests and the ``fulmen checkpoint`` tool.

Importing this package imports no torch; each module imports it when it needs it.
"""
