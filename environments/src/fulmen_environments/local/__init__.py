"""The ``local`` environment plugin: one machine, processes started by fulmen. Detected last."""

from fulmen import EnvironmentSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = EnvironmentSpec(
    name="local",
    target="fulmen_environments.local.environment:LocalEnvironment",
    description="this machine; fulmen's launcher starts the processes",
)


@hookimpl
def fulmen_environments():
    yield SPEC


@hookimpl(trylast=True)
def fulmen_detect_environment(environ):
    return "local"
