"""The ``single_device`` strategy plugin: one process, one device; the default for one device."""

from fulmen import StrategySpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = StrategySpec(
    name="single_device",
    target="fulmen_strategies.single_device.strategy:SingleDeviceStrategy",
    max_devices=1,
    multi_node=False,
    description="one process on one device (CPU, a GPU, MPS)",
)


@hookimpl
def fulmen_strategies():
    yield SPEC


@hookimpl(trylast=True)
def fulmen_default_strategy(num_devices, num_nodes):
    return "single_device" if num_devices == 1 and num_nodes == 1 else None
