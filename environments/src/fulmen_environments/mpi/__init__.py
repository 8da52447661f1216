"""The ``mpi`` environment plugin: processes started by ``mpirun``/``mpiexec``. Detected from
environment variables only; ``mpi4py`` (the ``fulmen-environments[mpi]`` extra) is imported
only when this environment is selected and needs to ask rank 0 for its address."""

from fulmen import EnvironmentSpec, hookimpl

SETS = (("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"), ("PMI_SIZE", "PMI_RANK"),
        ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"))


#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and compatibility.
SPEC = EnvironmentSpec(
    name="mpi",
    target="fulmen_environments.mpi.environment:MPIEnvironment",
    description="mpirun / mpiexec (Open MPI, MPICH, MVAPICH)",
)


@hookimpl
def fulmen_environments():
    yield SPEC


@hookimpl
def fulmen_detect_environment(environ):
    return "mpi" if any(all(n in environ for n in names) for names in SETS) else None
