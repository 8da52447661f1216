"""``Strategy``: how a model, its data and its gradients are spread over devices and processes.

Composition constructs a strategy from its record (or takes the user's instance), calls
:meth:`Strategy.attach` with the accelerator, precision, cluster environment and devices it
chose, then asks the strategy for its launcher (:meth:`Strategy.create_launcher`). Ranks and
world size come from the cluster environment. The Trainer and Lite drive a
run only through the methods below, so a distributed strategy overrides what it changes
(wrapping the module, samplers, collectives, checkpoint writing) and nothing in the loops.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from fulmen.api.naming import Named
from fulmen.api.run_config import RunConfig

if TYPE_CHECKING:
    import torch

    from fulmen.api.accelerator import Accelerator
    from fulmen.api.checkpoint_io import CheckpointIO
    from fulmen.api.environment import ClusterEnvironment
    from fulmen.api.precision import Precision

STEP_METHODS = ("training_step", "validation_step", "test_step", "predict_step")
#: Checkpoint methods a strategy had before ``fulmen.checkpoint.service`` did the job; a subclass
#: that still defines one is warned that it is not called.
_RETIRED_CHECKPOINT_METHODS = ("save_checkpoint", "load_checkpoint", "remove_checkpoint")


class Strategy(Named, ABC):
    """Base of every strategy; single-process behaviour lives in ``SingleDeviceStrategy``."""

    accelerator: Accelerator
    precision: Precision
    cluster_environment: ClusterEnvironment
    checkpoint_io: CheckpointIO

    #: True when parameters or optimizer state are split across processes (FSDP, DeepSpeed,
    #: sharded DDP): callbacks that copy the whole module or regroup the optimizer's parameters
    #: (StochasticWeightAveraging, BaseFinetuning) refuse such a strategy.
    shards_parameters: bool = False
    #: True when the strategy reads ``run_config.accumulate_grad_batches`` once, at set-up
    #: (DeepSpeed's engine config), so the factor cannot change between epochs
    #: (GradientAccumulationScheduler refuses such a strategy).
    fixed_accumulation: bool = False
    #: the module :meth:`connect` made this strategy's, until :meth:`setup_module` sets one up
    _connected_only: torch.nn.Module | None = None
    #: Who re-seeds python, numpy and torch (:func:`fulmen.seed.reset_seed`: the seed
    #: ``seed_everything`` last set) in every process just before this strategy's
    #: ``setup_environment``, once per stage: ``"Trainer"`` and/or ``"Lite"``. Lightning's
    #: strategies do it while joining the process group (the Trainer's ddp family, FSDP,
    #: DeepSpeed and model parallel; Fabric's FSDP, DeepSpeed and model parallel), so random
    #: draws made between ``seed_everything`` and ``fit`` do not change the run's numbers.
    reseeds_at_setup: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        retired = [name for name in _RETIRED_CHECKPOINT_METHODS if name in vars(cls)]
        if retired:
            import warnings

            from fulmen.errors import FulmenDeprecationWarning

            warnings.warn(FulmenDeprecationWarning(
                f"{cls.__module__}.{cls.__qualname__} defines {', '.join(retired)}, which fulmen "
                "no longer calls: fulmen.checkpoint.service saves, loads and removes "
                "checkpoints for every strategy. Declare sharded_checkpoint, "
                "checkpoint_template() or checkpoint_layout (a CheckpointLayout registered with "
                "fulmen_checkpoint_layouts) instead; see docs/migrating.md"), stacklevel=2)

    def __init__(self) -> None:
        self.launcher: Launcher | None = None
        self.parallel_devices: list[torch.device] = []
        self.num_nodes = 1
        self.sync_batchnorm = False  # set by the Trainer; parallel strategies convert layers
        #: The run flags of the Trainer or Lite running this strategy (see ``RunConfig``).
        self.run_config = RunConfig()
        self.module: torch.nn.Module | None = None  # the user's module, unwrapped
        self.model: torch.nn.Module | None = None  # what forward/step calls go through

    def attach(self, *, accelerator: Accelerator, precision: Precision,
               cluster_environment: ClusterEnvironment, parallel_devices: list[torch.device],
               num_nodes: int, checkpoint_io: CheckpointIO | None = None) -> None:
        """Receive what composition selected, and tell the environment the process layout."""
        from fulmen.api.checkpoint_io import TorchCheckpointIO

        self.accelerator, self.precision = accelerator, precision
        self.cluster_environment = cluster_environment
        self.parallel_devices, self.num_nodes = list(parallel_devices), num_nodes
        self.checkpoint_io = checkpoint_io or getattr(self, "checkpoint_io", None) \
            or TorchCheckpointIO()
        precision.connect(accelerator.device_type)
        if not cluster_environment.creates_processes_externally:
            per_node = self.processes_per_node
            cluster_environment.set_world_size(per_node * num_nodes)
            cluster_environment.set_global_rank(
                cluster_environment.node_rank() * per_node + cluster_environment.local_rank())

    def _env(self) -> ClusterEnvironment:
        if getattr(self, "cluster_environment", None) is None:
            from fulmen.errors import FulmenError

            raise FulmenError(f"strategy {self.name!r} is not attached to a selection yet; "
                              "construct a Trainer or Lite with it")
        return self.cluster_environment

    # ------------------------------------------------------------------ layout

    @property
    def processes_per_node(self) -> int:
        """Processes on each node: one per device unless the strategy drives several per process."""
        return max(len(self.parallel_devices), 1)

    @property
    def world_size(self) -> int:
        return self._env().world_size()

    @property
    def global_rank(self) -> int:
        return self._env().global_rank()

    @property
    def local_rank(self) -> int:
        return self._env().local_rank()

    @property
    def node_rank(self) -> int:
        return self._env().node_rank()

    @property
    def is_global_zero(self) -> bool:
        return self.global_rank == 0

    @property
    def data_parallel_size(self) -> int:
        """How many replicas see different data (the distributed sampler's ``num_replicas``).
        Default: the world size; a strategy that splits the model itself across ranks (tensor
        parallelism) has fewer."""
        return self.world_size

    @property
    def data_parallel_rank(self) -> int:
        """This process's index among the ``data_parallel_size`` replicas: ranks with the same
        one see the same batches. Default: the global rank."""
        return self.global_rank

    @property
    @abstractmethod
    def root_device(self) -> torch.device:
        """The device this process computes on."""

    # ------------------------------------------------------------------ processes

    def create_launcher(self) -> Launcher | None:
        """The launcher that starts this strategy's processes, or None when it runs in the
        current process.

        Called once by composition, after :meth:`attach` (``cluster_environment``,
        ``accelerator``, ``parallel_devices`` and ``num_nodes`` are set); the result is stored
        in ``self.launcher``. A subclass inherits its base's choice. Return None when the
        cluster environment started every process already
        (``cluster_environment.creates_processes_externally``). Default: None (one process).
        """
        return None

    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function`` in every process this strategy needs (through its launcher, unless
        the processes exist already)."""
        if self.launcher is not None and not \
                self.cluster_environment.creates_processes_externally:
            return self.launcher.launch(function, *args, **kwargs)
        return function(*args, **kwargs)

    def setup_environment(self) -> None:
        """In each process, before the model is set up: claim the device (start the group)."""
        self.accelerator.setup_device(self.root_device)

    def on_exception(self, exception: BaseException) -> None:
        """A run failed in this process: the others may be stuck in a collective, so the
        teardown that follows must not wait for them."""

    def teardown(self) -> None:
        """Release the devices and the environment after a run; the checkpoint IO finishes
        its writes first (an asynchronous save in flight is waited for)."""
        try:
            self.checkpoint_io.teardown()
        finally:
            self.accelerator.teardown()
            self.cluster_environment.teardown()

    # ------------------------------------------------------------------ model and optimizers

    def module_to_device(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move a module (parameters and registered buffers) to ``root_device``."""
        return module.to(self.root_device)

    def connect(self, module: torch.nn.Module) -> None:
        """Make ``module`` this strategy's module without setting it up (Lightning's
        ``Strategy.connect``): ``module``, ``model`` and ``lightning_module`` are ``module``
        as it is; nothing is converted, moved or wrapped — the next stage's
        :meth:`setup_module` does that."""
        self.module = self.model = self._connected_only = module

    @property
    def lightning_module(self) -> torch.nn.Module | None:
        """Lightning's name for :attr:`module`: the user's module, unwrapped."""
        return self.module

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Convert the module for the precision, move it, and wrap it if the strategy must.

        Sets ``self.module`` (the user's module) and ``self.model`` (what steps go through).
        Setting up the module that is set up already (fit, then test, then fit again with one
        Trainer) returns ``self.model`` as it is: a module is converted, moved and wrapped once.
        """
        if self.is_set_up(module):
            assert self.model is not None
            return self.model
        module = self.module_to_device(self.precision.convert_module(module))
        self.module, self.model = module, self.wrap_module(module)
        self._connected_only = None
        return self.model

    def is_set_up(self, module: torch.nn.Module) -> bool:
        """Whether ``module`` is the module this strategy set up last (``setup_module``); a
        module only :meth:`connect`-ed is not."""
        return self.model is not None and module is self.module and \
            module is not self._connected_only

    @property
    def device_mesh(self) -> Any:
        """The ``torch.distributed.DeviceMesh`` a strategy builds for the model to parallelise
        itself on (``Module.device_mesh`` in ``configure_model``). Default: None."""
        return None

    def module_init_context(self) -> contextlib.AbstractContextManager[Any]:
        """The context ``Module.configure_model`` runs in (Trainer) — e.g. the meta device, for a
        strategy that materialises each rank's shard after parallelising. Default: nothing."""
        return contextlib.nullcontext()

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """The object forward and step calls go through (DDP wraps here). Default: itself."""
        return module

    def setup_optimizers(self, optimizers: list[Any]) -> list[Any]:
        """Adapt optimizers to the wrapped module (sharded strategies rebuild them)."""
        return optimizers

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``module.<method>(*args)`` in the precision's context: the one place a strategy
        customises what happens around a step's forward.

        The Trainer calls it with ``"training_step"``, ``"validation_step"``, ``"test_step"``
        and ``"predict_step"``. Lite calls it with ``"forward"`` for every call of the module
        it set up (``model(x)``), in training and in evaluation alike; ``"forward"`` runs
        ``self.model`` (what :meth:`wrap_module` returned, DDP's wrapper) rather than a
        method of the plain module. A strategy that changes the training forward (entering
        :meth:`no_backward_sync` every other step, counting steps) does it for
        ``"training_step"`` and ``"forward"`` alike, or the Trainer and Lite train differently
        (the conformance kit compares them). Lite with several set-up modules calls this for
        the module set up last (``self.model``); the others' calls go to their wrapper
        directly."""
        module = self.module
        assert module is not None, "setup_module() first"
        call = self.model if method == "forward" else getattr(module, method)
        assert call is not None
        with self.precision.forward_context():
            return call(*args, **kwargs)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Backward through the precision (loss scaling)."""
        self.precision.backward(loss, *args, **kwargs)

    def optimizer_step(self, optimizer: Any, closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        """Step ``optimizer``: ``closure`` computes the loss and gradients, ``after_closure``
        runs before the update (hooks, clipping) on unscaled gradients."""
        return self.precision.optimizer_step(optimizer, closure, after_closure)

    def clip_gradients(self, module: torch.nn.Module, optimizer: Any, clip_val: float,
                       algorithm: str = "norm") -> Any:
        """Clip the gradients of the parameters ``optimizer`` updates, after unscaling."""
        import torch

        self.precision.unscale_gradients(optimizer)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if algorithm == "value":
            return torch.nn.utils.clip_grad_value_(params, clip_val)
        return torch.nn.utils.clip_grad_norm_(params, clip_val)

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        """Skip gradient synchronisation for the forwards and backwards inside (gradient
        accumulation); the first backward after it synchronises what was accumulated.

        It must enclose the forward as well as the backward: DDP decides in the forward whether
        the backward that follows reduces gradients (``DistributedDataParallel.no_sync``), so a
        context entered after the forward, around the backward only, skips nothing. The Trainer
        enters it around the whole closure (forward and backward) of every batch that does not
        step the optimizer; Lite users around both (``with lite.no_backward_sync(model):``).
        Overriding it claims that synchronisation is skipped: the conformance kit counts the
        reductions of a forward and backward inside and outside it. Default: nothing to skip."""
        yield

    # ------------------------------------------------------------------ data

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        """Adapt a dataloader (a distributed sampler...). ``stage`` is the Trainer's ``"train"``,
        ``"val"``, ``"test"`` or ``"predict"``, or ``"lite"`` for ``Lite.setup_dataloaders``.
        Default: unchanged."""
        return dataloader

    def batch_to_device(self, batch: Any, device: torch.device | None = None) -> Any:
        """Move every tensor of a nested batch to ``device`` (default ``root_device``)."""
        from fulmen.apply import apply_to_tensors

        target = device or self.root_device
        return apply_to_tensors(batch, lambda t: t.to(target, non_blocking=True))

    # ------------------------------------------------------------------ collectives

    @abstractmethod
    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        """Reduce a tensor across processes (``"mean"``, ``"sum"``, ``"max"``, ``"min"``)."""

    @abstractmethod
    def all_gather(self, tensor: Any, sync_grads: bool = False) -> Any:
        """Gather a tensor from every process, stacked on a new first dimension."""

    @abstractmethod
    def broadcast(self, obj: Any, src: int = 0) -> Any:
        """Send any picklable object from rank ``src`` to every process."""

    @abstractmethod
    def barrier(self, name: str | None = None) -> None:
        """Wait until every process reaches this point."""

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        """Make every process agree: ``all`` ranks must say True, or ``any`` may."""
        return decision

    def start_agreement(self, value: int) -> Callable[[], int]:
        """Start agreeing on the largest ``value`` over all processes; return a function that
        gives the result.

        Every rank calls this at the same point and calls the returned function once, at the
        same later point. The Trainer uses it for control decisions (a preemption signal seen by
        one rank) so that training never waits on them: it starts an agreement after one step
        and reads it after the next. The default reduces when the result is read (correct,
        but blocking); ``ParallelStrategy`` runs the exchange in the background on a CPU group.
        """
        import torch

        vote = torch.tensor([value], device=self.root_device)
        return lambda: int(self.reduce(vote, reduce_op="max").item())

    # ------------------------------------------------------------------ checkpoints
    # What the checkpoint service (``fulmen.checkpoint.service``: save, load, remove) needs to
    # know. The strategy declares; the service writes and reads.

    #: The name of the registered ``CheckpointLayout`` (``fulmen_checkpoint_layouts`` hook) this
    #: strategy's engine writes its checkpoints in, when it cannot write fulmen's canonical ones;
    #: the service then saves through the layout's ``save``. None (default): canonical.
    checkpoint_layout: str | None = None

    def module_state_dict(self, module: torch.nn.Module | None = None) -> dict[str, Any]:
        """A module's state as one dictionary (sharded strategies gather it). ``module``: one of
        several set-up modules (Lite); default the one being trained."""
        target = module if module is not None else self.module
        assert target is not None
        return target.state_dict()

    def load_module_state_dict(self, state: dict[str, Any], strict: bool = True,
                               module: torch.nn.Module | None = None) -> Any:
        target = module if module is not None else self.module
        assert target is not None
        return target.load_state_dict(state, strict=strict)

    def optimizer_state(self, optimizer: Any) -> dict[str, Any]:
        """One optimizer's state for a checkpoint, in the canonical form: ``state`` and
        ``param_groups`` name parameters by their names in ``self.module`` (as
        ``torch.distributed.checkpoint.state_dict.get_optimizer_state_dict`` does), so any
        strategy can load it. Sharded strategies return their shards (DTensors) or the whole
        state consolidated; torch's numbered form is kept for an optimizer over tensors that
        are not the module's parameters."""
        from fulmen.checkpoint import optimizer_state as states

        return states.optimizer_state(self.module, optimizer)

    def load_optimizer_state(self, optimizer: Any, state: dict[str, Any]) -> None:
        """Restore an optimizer state: the canonical form (from any strategy, any world size)
        or torch's numbered ``Optimizer.state_dict()`` (older checkpoints, Lightning's)."""
        from fulmen.checkpoint import optimizer_state as states

        states.load_optimizer_state(self.module, optimizer, state)

    @property
    def sharded_checkpoint(self) -> bool:
        """Whether checkpoints are written by every rank, as a ``torch.distributed.checkpoint``
        directory, because each process holds only part of the state (DTensor shards). False
        (default): one process holds the whole state and rank zero writes one file. Either is
        the canonical checkpoint (``fulmen.checkpoint.canonical``), readable by every
        strategy at every world size. ``fulmen.checkpoint.service`` reads it to decide who
        writes what."""
        return False

    def checkpoint_template(self) -> dict[str, Any] | None:
        """Entries (``state_dict``, ``optimizer_states``) shaped as this process holds the
        state — DTensor shards — for a directory checkpoint to be read into, each rank reading
        only its part (DCP reshards from the writer's world size). None (default): the
        directory's tensors are read whole, then handed to :meth:`load_module_state_dict` and
        :meth:`load_optimizer_state`."""
        return None


class Launcher(ABC):
    """Created by the strategy it launches (:meth:`fulmen.Strategy.create_launcher`), which
    passes itself as ``strategy``; never created when the cluster environment started the
    processes. fulmen's own launchers live in ``fulmen_strategies.launchers`` (``ScriptLauncher``,
    ``MultiprocessingLauncher``) and may be reused by any strategy.
    """

    def __init__(self, strategy: Strategy) -> None:
        self.strategy = strategy

    @property
    def is_interactive_compatible(self) -> bool:
        """Whether it can run in a notebook or REPL (re-running a script cannot)."""
        return False

    @abstractmethod
    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function(*args, **kwargs)`` in every process and return rank zero's result."""
