"""The ``torchelastic`` environment plugin: processes started by ``torchrun``."""

from fulmen import EnvironmentSpec, hookimpl

MARKERS = ("TORCHELASTIC_RUN_ID", "GROUP_RANK", "LOCAL_WORLD_SIZE")


#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = EnvironmentSpec(
    name="torchelastic",
    target="fulmen_environments.torchelastic.environment:TorchElasticEnvironment",
    description="torchrun / torch.distributed.run (elastic restarts included)",
)


@hookimpl
def fulmen_environments():
    yield SPEC


@hookimpl(tryfirst=True)
def fulmen_detect_environment(environ):
    return "torchelastic" if any(name in environ for name in MARKERS) else None
