"""fulmen plugin: the Acme scheduler's cluster environment.

This module is what the ``fulmen.plugins`` entry point loads. It only declares data (the record
names its class lazily as ``"module:Attr"``) and detects Acme jobs from environment variables,
so listing plugins imports nothing heavy.
"""

from fulmen import EnvironmentSpec, hookimpl

VARIABLES = ("ACME_JOB_ID", "ACME_WORLD_SIZE", "ACME_RANK", "ACME_LOCAL_RANK", "ACME_NODE_RANK",
             "ACME_HEAD_NODE")


@hookimpl
def fulmen_environments():
    yield EnvironmentSpec(
        name="acme",
        target="fulmen_acme_cluster.environment:AcmeEnvironment",
        description="Acme scheduler jobs (one process per task)",
    )


@hookimpl(tryfirst=True)
def fulmen_detect_environment(environ):
    """An Acme task has a job id and a rank; anything less is not an Acme job."""
    if "ACME_JOB_ID" in environ and "ACME_RANK" in environ:
        return "acme"
    return None
