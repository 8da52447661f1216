"""The ``horovod`` plugin: ``strategy="horovod"`` and the ``horovod`` cluster environment.

Processes are always started by ``horovodrun`` (or ``mpirun``); the script is the same for one
process or many. Horovod is imported only when the strategy is selected (listing plugins imports
nothing from here but these records), and it is not a pip dependency of ``fulmen-horovod``:
the ``fulmen-build-horovod`` command (``make install-horovod`` in a checkout) builds it against
the installed torch.
"""

from fulmen import EnvironmentSpec, StrategySpec, hookimpl

#: Set by ``horovodrun --gloo`` in every worker (``horovodrun`` over MPI sets the MPI ones).
MARKERS = ("HOROVOD_RANK", "HOROVOD_SIZE")
INSTALL = ("fulmen-horovod does not install Horovod itself: build it against the installed "
           "torch with the fulmen-build-horovod command (make install-horovod in a fulmen "
           "checkout; see docs/horovod.md), or use strategy='ddp', which needs no extra library")


#: The plugin's records: their registered names are read by the classes they target (one
#: source for each name).
STRATEGY = StrategySpec(
    name="horovod",
    target="fulmen_horovod.strategy:HorovodStrategy",
    requires=["horovod"], install=INSTALL,
    accelerators=["cpu", "cuda"],
    description="Horovod ring-allreduce; processes started by horovodrun / mpirun",
)
ENVIRONMENT = EnvironmentSpec(
    name="horovod",
    target="fulmen_horovod.environment:HorovodEnvironment",
    requires=["horovod"], install=INSTALL,
    description="horovodrun --gloo (ranks from HOROVOD_RANK, HOROVOD_SIZE, ...)",
)


@hookimpl
def fulmen_strategies():
    yield STRATEGY


@hookimpl
def fulmen_environments():
    yield ENVIRONMENT


@hookimpl(tryfirst=True)
def fulmen_detect_environment(environ):
    return "horovod" if all(name in environ for name in MARKERS) else None


