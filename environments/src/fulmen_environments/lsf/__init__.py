"""The ``lsf`` environment plugin: IBM Spectrum LSF jobs started with ``jsrun``."""

from fulmen import EnvironmentSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = EnvironmentSpec(
    name="lsf",
    target="fulmen_environments.lsf.environment:LSFEnvironment",
    description="IBM Spectrum LSF with jsrun (LSB_JOBID, LSB_DJOB_RANKFILE, JSM_NAMESPACE_*)",
)


@hookimpl
def fulmen_environments():
    yield SPEC


@hookimpl
def fulmen_detect_environment(environ):
    markers = ("LSB_JOBID", "LSB_DJOB_RANKFILE", "JSM_NAMESPACE_SIZE", "JSM_NAMESPACE_RANK")
    return "lsf" if all(name in environ for name in markers) else None
