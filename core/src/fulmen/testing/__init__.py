"""``fulmen.testing``: the conformance kit that holds a plugin to the contracts of ``fulmen.api``.

Two ways to use it:

- ``fulmen plugins --check [NAME...]`` prints a table of every clause per plugin;
- ``pytest -p fulmen.testing --fulmen-check NAME`` (or ``fulmen_check = NAME`` under
  ``[tool.pytest.ini_options]``) adds one test per clause and name to a vendor's own suite.

From Python: ``fulmen.testing.check(["acme_ddp"])`` returns a :class:`Report`.

Each kind is exercised through public API only: an accelerator parses devices and sets itself
up; a precision runs forward and backward under its context and round-trips its state; a
cluster environment reports consistent ranks and its ``detect()`` has no side effects; a
strategy trains with ``Trainer`` and ``Lite`` on one process and, when ``devices=2`` makes two,
on two real processes, saves and loads checkpoints, and keeps the semantics of ``reduce``,
``all_gather``, ``broadcast`` and ``barrier`` on every rank. Every run has a timeout.

Importing this module imports neither torch nor plugin code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fulmen.testing.clauses import CLAUSES, FAIL, PASS, SKIP, Clause, Result, clauses_for
from fulmen.testing.runner import Report, Runner, Target, select_targets

DEFAULT_TIMEOUT = 120.0


def check(names: Sequence[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT,
          exhaustive: bool = False, progress: Callable[[str], None] | None = None) -> Report:
    """Check ``names`` (registered names, or plugin names meaning all their names; every
    installed plugin when empty). ``timeout``: seconds per process run. ``exhaustive``: a
    two-process run for every strategy name, not one per strategy class."""
    runner = Runner(timeout=timeout, exhaustive=exhaustive, progress=progress)
    return runner.run(select_targets(names))


# ---------------------------------------------------------------- pytest plugin (-p fulmen.testing)


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("fulmen", "fulmen plugin conformance kit")
    group.addoption("--fulmen-check", action="append", default=[], metavar="NAME",
                    help="check this registered name or plugin against the fulmen contracts "
                    "(repeat, or separate with commas)")
    group.addoption("--fulmen-check-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"timeout per process run (default {DEFAULT_TIMEOUT:g})")
    parser.addini("fulmen_check", "registered names or plugins the fulmen kit checks",
                  type="args", default=[])
    parser.addini("fulmen_check_timeout", "timeout per process run of the fulmen kit",
                  default=str(DEFAULT_TIMEOUT))


def pytest_configure(config: Any) -> None:
    from fulmen.testing import pytest_plugin

    config.pluginmanager.register(pytest_plugin.KitPlugin(config), "fulmen-testing-kit")


__all__ = ["CLAUSES", "FAIL", "PASS", "SKIP", "Clause", "Report", "Result", "Runner", "Target",
           "check", "clauses_for", "select_targets"]
