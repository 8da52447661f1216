"""The plugin kinds: one table that drives the records, the collect hooks, the catalog, the
listing (``fulmen plugins``), composition and the docs. A new kind is a new row here (plus its
record class, hook specification and base class)."""

from __future__ import annotations

from dataclasses import dataclass

from fulmen.kernel.records import (
    AcceleratorSpec,
    EnvironmentSpec,
    LoggerSpec,
    NoticeSpec,
    PrecisionSpec,
    Spec,
    StrategySpec,
)


@dataclass(frozen=True)
class Kind:
    """name: ``"strategy"``; plural: ``"strategies"``; record: the record class plugins yield;
    hook: the collect hook that yields them; base: ``"module:Class"`` of the base class in
    ``fulmen.api`` an instance must extend."""

    name: str
    plural: str
    record: type[Spec]
    hook: str
    base: str


TABLE: tuple[Kind, ...] = (
    Kind("accelerator", "accelerators", AcceleratorSpec, "fulmen_accelerators",
         "fulmen.api:Accelerator"),
    Kind("strategy", "strategies", StrategySpec, "fulmen_strategies", "fulmen.api:Strategy"),
    Kind("precision", "precisions", PrecisionSpec, "fulmen_precisions", "fulmen.api:Precision"),
    Kind("environment", "environments", EnvironmentSpec, "fulmen_environments",
         "fulmen.api:ClusterEnvironment"),
    Kind("logger", "loggers", LoggerSpec, "fulmen_loggers", "fulmen.api:Logger"),
    Kind("notice", "notices", NoticeSpec, "fulmen_notices", "fulmen.api.notice:PreemptionNotice"),
)
BY_NAME: dict[str, Kind] = {k.name: k for k in TABLE}
KINDS: tuple[str, ...] = tuple(BY_NAME)
PLURAL: dict[str, str] = {k.name: k.plural for k in TABLE}
HOOKS: dict[str, str] = {k.name: k.hook for k in TABLE}
RECORDS: dict[str, type[Spec]] = {k.name: k.record for k in TABLE}
