"""The ``dp`` strategy plugin: torch.nn.DataParallel over the GPUs of one process."""

from fulmen import StrategySpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = StrategySpec(
    name="dp",
    target="fulmen_strategies.dp.strategy:DataParallelStrategy",
    accelerators=["cuda"],
    multi_node=False,
    description="DataParallel: one process splits each batch over its GPUs (needs GPUs; "
                "ddp is faster)",
)


@hookimpl
def fulmen_strategies():
    yield SPEC
