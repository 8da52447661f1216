"""The ``slurm`` environment plugin: processes started by ``srun`` in a SLURM job."""

from fulmen import EnvironmentSpec, hookimpl

INTERACTIVE_JOB_NAMES = ("bash", "interactive")


#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = EnvironmentSpec(
    name="slurm",
    target="fulmen_environments.slurm.environment:SLURMEnvironment",
    description="SLURM batch jobs (srun starts one process per task)",
)


@hookimpl
def fulmen_environments():
    yield SPEC


@hookimpl
def fulmen_detect_environment(environ):
    """A batch step with tasks; an interactive shell (salloc, job name bash/interactive) is not
    detected — select it explicitly with plugins=["slurm"] if you srun from there."""
    if "SLURM_NTASKS" not in environ and "SLURM_PROCID" not in environ:
        return None
    if environ.get("SLURM_JOB_NAME") in INTERACTIVE_JOB_NAMES:
        return None
    return "slurm"
