"""The ``csv`` logger plugin (entry point ``csv`` of fulmen-core): ``CSVLogger``, no
dependencies."""

from __future__ import annotations

from collections.abc import Iterator

from fulmen.kernel.hookspecs import hookimpl
from fulmen.kernel.records import LoggerSpec


@hookimpl
def fulmen_loggers() -> Iterator[LoggerSpec]:
    yield LoggerSpec(name="csv", target="fulmen.loggers.csv:CSVLogger",
                     description="metrics.csv and hparams.yaml under default_root_dir")
