"""The ``ddp2`` strategy plugin: DataParallel inside each node, DDP across nodes."""

from fulmen import StrategySpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = StrategySpec(
    name="ddp2",
    target="fulmen_strategies.ddp2.strategy:DDP2Strategy",
    accelerators=["cuda"],
    interactive=False,
    description="DP inside each node, DDP across nodes: one process per node (needs GPUs)",
)


@hookimpl
def fulmen_strategies():
    yield SPEC
