"""The ``pipe`` plugin: sequential model parallelism for a module's ``nn.Sequential``.

One process drives every selected device: the ``nn.Sequential`` is cut into ``balance``
partitions (one per device), each batch is split into ``chunks`` micro-batches that flow through
the partitions as a pipeline (FairScale's ``Pipe``, GPipe), with optional activation
checkpointing. Nothing here imports torch or fairscale.
"""


from fulmen import StrategySpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = StrategySpec(
    name="pipe", target="fulmen_fairscale.pipe.strategy:PipeStrategy",
    accelerators=["cpu", "cuda"], multi_node=False,
    # autocast is per thread and the pipeline computes in worker threads: mixed precision
    # would silently run in float32, so only the "true" precisions are declared.
    precisions=["32-true", "64-true", "bf16-true", "16-true"],
    description="sequential model parallelism (FairScale Pipe): the module's nn.Sequential "
                "split across the devices, micro-batches, activation checkpointing")


@hookimpl
def fulmen_strategies():
    yield SPEC


