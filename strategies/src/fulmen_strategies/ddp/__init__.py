"""The ``ddp`` strategy plugin: DistributedDataParallel with three ways to start processes.

``ddp`` re-runs the script per process (the default for several devices); ``ddp_spawn`` and
``ddp_fork`` / ``ddp_notebook`` start workers with multiprocessing and return to the caller
(``ddp_notebook`` is what ``strategy="auto"`` picks in a notebook).
"""


from fulmen import StrategySpec, hookimpl
from fulmen_strategies.ddp.variants import VARIANTS

_TARGET = "fulmen_strategies.ddp.strategy:DDPStrategy"


@hookimpl
def fulmen_strategies():
    for name, kwargs, interactive, description in VARIANTS:
        yield StrategySpec(name=name, target=_TARGET, init_kwargs=kwargs,
                           needs_distributed_backend=True, interactive=interactive,
                           description=f"DistributedDataParallel: {description}")


@hookimpl
def fulmen_default_strategy(num_devices, num_nodes, interactive, distributed_backend):
    """Several devices or nodes on an accelerator with a distributed backend: ddp."""
    if distributed_backend and (num_devices > 1 or num_nodes > 1):
        return "ddp_notebook" if interactive else "ddp"
    return None


