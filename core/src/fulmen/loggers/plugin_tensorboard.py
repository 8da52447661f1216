"""The ``tensorboard`` logger plugin (entry point ``tensorboard`` of fulmen-core):
``TensorBoardLogger``, which needs the ``tensorboard`` package (``fulmen[tensorboard]``)."""

from __future__ import annotations

from collections.abc import Iterator

from fulmen.kernel.hookspecs import hookimpl
from fulmen.kernel.records import LoggerSpec


@hookimpl
def fulmen_loggers() -> Iterator[LoggerSpec]:
    yield LoggerSpec(name="tensorboard", aliases=["tb"],
                     target="fulmen.loggers.tensorboard:TensorBoardLogger",
                     requires=["tensorboard"], install="pip install 'fulmen[tensorboard]'",
                     description="TensorBoard event files under default_root_dir")
