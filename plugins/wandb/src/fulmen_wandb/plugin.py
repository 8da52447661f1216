"""The ``wandb`` logger plugin: declares the name only; nothing here imports wandb."""

from __future__ import annotations

from collections.abc import Iterator

from fulmen.kernel.hookspecs import hookimpl
from fulmen.kernel.records import LoggerSpec


@hookimpl
def fulmen_loggers() -> Iterator[LoggerSpec]:
    yield LoggerSpec(name="wandb", target="fulmen_wandb.logger:WandbLogger",
                     requires=["wandb"], install="pip install 'fulmen[wandb]'",
                     description="runs in Weights & Biases (online, or offline run files)")
