"""The ``comet`` logger plugin: declares the name only; nothing here imports comet_ml."""

from __future__ import annotations

from collections.abc import Iterator

from fulmen.kernel.hookspecs import hookimpl
from fulmen.kernel.records import LoggerSpec


@hookimpl
def fulmen_loggers() -> Iterator[LoggerSpec]:
    yield LoggerSpec(name="comet", target="fulmen_comet.logger:CometLogger",
                     requires=["comet_ml"], install="pip install 'fulmen[comet]'",
                     description="experiments in Comet (online, or offline archives)")
