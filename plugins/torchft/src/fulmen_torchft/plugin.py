"""The ``torchft`` strategy plugin: declares the name only; nothing here imports torchft."""

from __future__ import annotations

from collections.abc import Iterator

from fulmen.kernel.hookspecs import hookimpl
from fulmen.kernel.records import StrategySpec

#: The plugin's record: ``TorchFTStrategy`` reads its name from it (one source for the name).
SPEC = StrategySpec(
    name="torchft", target="fulmen_torchft.strategy:TorchFTStrategy",
    needs_distributed_backend=True, requires=["torchft"],
    install="pip install 'fulmen[torchft]'",
    description="fault-tolerant DDP on torchft: replica groups with a per-step quorum; a "
                "lost group leaves the others training and rejoins from a live peer")


@hookimpl
def fulmen_strategies() -> Iterator[StrategySpec]:
    yield SPEC
