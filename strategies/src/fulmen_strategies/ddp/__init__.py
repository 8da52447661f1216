"""The ``ddp`` strategy plugin: DistributedDataParallel with three ways to start processes.

``ddp`` re-runs the script per process (the default for several devices); ``ddp_spawn`` and
``ddp_fork`` / ``ddp_notebook`` start workers with multiprocessing and return to the caller
(``ddp_notebook`` is what ``strategy="auto"`` picks in a notebook).
"""

import sys

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


@hookimpl
def fulmen_check_selection(selection):
    """A job whose processes already exist must match what devices x num_nodes asks for."""
    strategy, env = selection.strategy, selection.environment
    parallel = sys.modules.get("fulmen_strategies.parallel")  # imported if one was selected
    if not env.creates_processes_externally or parallel is None or not isinstance(
            strategy, parallel.ParallelStrategy):
        return None
    expected = strategy.processes_per_node * selection.num_nodes
    actual = env.world_size()
    if actual != expected:
        return (f"the processes were already started with world size {actual} (from the "
                f"{env.name!r} environment), but devices={selection.num_devices} x "
                f"num_nodes={selection.num_nodes} asks for {expected}; make the numbers agree")
    return None
