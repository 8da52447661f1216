"""The ``mlflow`` logger plugin: declares the name only; nothing here imports mlflow."""

from __future__ import annotations

from collections.abc import Iterator

from fulmen.kernel.hookspecs import hookimpl
from fulmen.kernel.records import LoggerSpec


@hookimpl
def fulmen_loggers() -> Iterator[LoggerSpec]:
    yield LoggerSpec(name="mlflow", target="fulmen_mlflow.logger:MLFlowLogger",
                     requires=["mlflow"], install="pip install 'fulmen[mlflow]'",
                     description="runs on an MLflow tracking server (or ./mlruns)")
