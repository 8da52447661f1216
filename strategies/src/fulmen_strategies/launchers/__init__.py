"""Launchers: how a strategy's processes come to exist."""
