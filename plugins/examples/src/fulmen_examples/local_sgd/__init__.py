"""The ``local_sgd`` strategy plugin: the record, nothing else (the class loads when selected)."""

from fulmen import StrategySpec, hookimpl

TARGET = "fulmen_examples.local_sgd.strategy:LocalSGDStrategy"


@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="local_sgd", target=TARGET, accelerators=["cpu", "cuda"],
                       description="local SGD: parameters averaged every sync_every steps")
    yield StrategySpec(name="local_sgd_spawn",
                       target=TARGET,
                       init_kwargs={"start_method": "spawn"}, accelerators=["cpu", "cuda"],
                       description="local SGD in spawned workers; returns to the caller")
