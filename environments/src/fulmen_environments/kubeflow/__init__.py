"""The ``kubeflow`` environment plugin: a Kubeflow PyTorchJob. Never auto-detected (its
variables look like any torch launch, and a false positive would silently mis-shard data):
select it with ``plugins=["kubeflow"]``."""

from fulmen import EnvironmentSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = EnvironmentSpec(
    name="kubeflow",
    target="fulmen_environments.kubeflow.environment:KubeflowEnvironment",
    description="Kubeflow PyTorchJob, one process per pod (select with plugins=['kubeflow'])",
)


@hookimpl
def fulmen_environments():
    yield SPEC
