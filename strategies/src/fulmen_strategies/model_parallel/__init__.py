"""The ``model_parallel`` strategy plugin: a DeviceMesh for FSDP2 + tensor parallelism."""

from fulmen import StrategySpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = StrategySpec(
    name="model_parallel",
    target="fulmen_strategies.model_parallel.strategy:ModelParallelStrategy",
    needs_distributed_backend=True,
    precisions=["32-true", "bf16-mixed", "bf16-true"],
    interactive=False,
    description="2-D DeviceMesh (data_parallel x tensor_parallel): the model applies "
                "parallelize_module and fully_shard itself (configure_model or "
                "parallelize_fn)",
)


@hookimpl
def fulmen_strategies():
    yield SPEC
