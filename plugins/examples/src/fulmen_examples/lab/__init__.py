"""The ``lab`` environment plugin: detected when the lab scheduler set ``LAB_RANK``."""

from fulmen import EnvironmentSpec, hookimpl


@hookimpl
def fulmen_environments():
    yield EnvironmentSpec(name="lab", target="fulmen_examples.lab.environment:LabEnvironment",
                          description="the lab scheduler (LAB_WORLD_SIZE, LAB_RANK, ...)")


@hookimpl
def fulmen_detect_environment(environ):
    return "lab" if "LAB_RANK" in environ else None
