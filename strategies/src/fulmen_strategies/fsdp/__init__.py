"""The ``fsdp`` strategy plugin: FSDP2 (``torch.distributed.fsdp.fully_shard``), on CPU and CUDA."""

from fulmen import StrategySpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = StrategySpec(
    name="fsdp",
    target="fulmen_strategies.fsdp.strategy:FSDPStrategy",
    needs_distributed_backend=True,
    precisions=["32-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true"],
    interactive=False,
    description="Fully Sharded Data Parallel (FSDP2): parameters, gradients and optimizer "
                "state sharded across processes",
)


@hookimpl
def fulmen_strategies():
    yield SPEC
