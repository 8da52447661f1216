"""The ``ddp2`` strategy plugin: DataParallel inside each node, DDP across nodes."""

from fulmen import StrategySpec, hookimpl


@hookimpl
def fulmen_strategies():
    yield StrategySpec(
        name="ddp2",
        target="fulmen_strategies.ddp2.strategy:DDP2Strategy",
        accelerators=["cuda"],
        interactive=False,
        description="DP inside each node, DDP across nodes: one process per node (needs GPUs)",
    )
