"""The pytest side of the kit (registered by ``pytest -p fulmen.testing``).

With ``--fulmen-check NAME`` (or the ``fulmen_check`` ini value) the session gets one test per
name and clause, ``fulmen-check[strategy:acme_ddp:strategy.collectives]``; the checks run once,
on the first such test, and each test reports its clause (a failure shows the fix, a clause the
machine cannot run is a skip with the reason). The ``fulmen_check`` fixture runs the kit from a
test of your own: ``report = fulmen_check(["acme_ddp"]); assert report.ok, report.failures``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from fulmen.testing.clauses import FAIL, SKIP, Result, clauses_for
from fulmen.testing.runner import Report, Runner, Target, select_targets


class ClauseFailed(Exception):
    """A clause a plugin does not keep."""


class KitPlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        given = [n for item in config.getoption("fulmen_check") or [] for n in item.split(",")]
        self.names = [n.strip() for n in [*given, *config.getini("fulmen_check")] if n.strip()]
        timeout = config.getoption("fulmen_check_timeout")
        self.timeout = float(timeout if timeout is not None else
                             config.getini("fulmen_check_timeout"))
        self.targets: list[Target] = []
        self._report: Report | None = None

    def report(self) -> Report:
        if self._report is None:
            self._report = Runner(timeout=self.timeout).run(self.targets)
        return self._report

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if not self.names:
            return
        self.targets = select_targets(self.names)
        for t in self.targets:
            for clause in clauses_for(t.kind):
                items.append(ClauseItem.from_parent(
                    session, name=f"fulmen-check[{t.kind}:{t.name}:{clause.id}]", kit=self,
                    target=t, clause=clause.id))

    @pytest.fixture
    def fulmen_check(self) -> Callable[..., Report]:
        """``fulmen_check(names, timeout=..., exhaustive=False)`` → a :class:`Report`."""
        def run(names: Sequence[str] | None = None, **options: Any) -> Report:
            return Runner(timeout=options.pop("timeout", self.timeout), **options).run(
                select_targets(names))

        return run


class ClauseItem(pytest.Item):
    def __init__(self, *, kit: KitPlugin, target: Target, clause: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kit, self.target, self.clause = kit, target, clause

    def runtest(self) -> None:
        result = self.kit.report().for_name(self.target.kind, self.target.name).get(self.clause)
        if result is None:
            raise ClauseFailed(f"no verdict for {self.clause}")
        if result.status == SKIP:
            pytest.skip(result.detail or "not checked here")
        if result.status == FAIL:
            raise ClauseFailed(explain(result))

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, ClauseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[str, int | None, str]:
        t = self.target
        return (f"{t.plugin} ({t.distribution})", None,
                f"{t.kind} {t.name!r}: {self.clause}")


def explain(result: Result) -> str:
    from fulmen.testing.table import explain as line

    return line(result)[2:]
