"""The ``local`` environment plugin: one machine, processes started by fulmen. Detected last."""

from fulmen import EnvironmentSpec, hookimpl


@hookimpl
def fulmen_environments():
    yield EnvironmentSpec(
        name="local",
        target="fulmen_environments.local.environment:LocalEnvironment",
        description="this machine; fulmen's launcher starts the processes",
    )


@hookimpl(trylast=True)
def fulmen_detect_environment(environ):
    return "local"
