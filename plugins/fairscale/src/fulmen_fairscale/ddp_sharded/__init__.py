"""The ``ddp_sharded`` plugin: FairScale's OSS optimizer + ShardedDataParallel.

``ddp_sharded`` re-runs the script once per process (like ``ddp``); ``ddp_sharded_spawn`` starts
workers with multiprocessing and returns to the caller (like ``ddp_spawn``). Nothing here imports
torch or fairscale: the target class is imported only when one of the names is selected.
"""


from fulmen import StrategySpec, hookimpl

_TARGET = "fulmen_fairscale.ddp_sharded.strategy:ShardedDDPStrategy"
PRECISIONS = ["32-true", "16-mixed", "bf16-mixed"]


#: The plugin's records: ``ShardedDDPStrategy`` names an instance from them (one source for each
#: name).
RECORDS = (
    StrategySpec(
        name="ddp_sharded", target=_TARGET, interactive=False,
        accelerators=["cpu", "cuda"], precisions=PRECISIONS,
        description="sharded DDP (FairScale OSS + ShardedDataParallel): optimizer state and "
                    "gradients sharded; re-runs the script once per process"),
    StrategySpec(
        name="ddp_sharded_spawn", target=_TARGET, interactive=False,
        init_kwargs={"start_method": "spawn"}, accelerators=["cpu", "cuda"],
        precisions=PRECISIONS,
        description="sharded DDP (FairScale OSS + ShardedDataParallel) in spawned workers; "
                    "returns to the caller"),
)


@hookimpl
def fulmen_strategies():
    yield from RECORDS
