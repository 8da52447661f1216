# mypy: disable-error-code="empty-body"
"""Hook specifications: the contract between the fulmen kernel and its plugins.

A plugin is a module (or any object) with functions marked ``@fulmen.hookimpl`` whose names match
the hooks below. It is registered through the ``fulmen.plugins`` entry-point group; the entry-point
name is its identity (``fulmen plugins`` lists it, ``FULMEN_DISABLE_PLUGINS`` blocks it)::

    # pyproject.toml of a plugin distribution
    [project.entry-points."fulmen.plugins"]
    my_strategy = "my_package.my_strategy"     # a module holding the hook implementations

An implementation may accept any subset of a hook's parameters. Two kinds of hook exist:

* **collect** hooks are called on every plugin and each result is kept. Every implementation
  is guarded, so one plugin that raises is isolated (a ``PluginWarning`` naming it and its
  distribution, or a ``PluginError`` under ``FULMEN_STRICT_PLUGINS=1``) and the others still
  count.
* **first result** hooks are called in pluggy's order (``tryfirst`` implementations first,
  ``trylast`` ones last, otherwise the most recently registered first) and stop at the first
  result that is not ``None``.

pluggy calls the hooks, so hook wrappers (``@hookimpl(wrapper=True)``) see and may change any
hook's result, and ``FULMEN_TRACE_HOOKS=1`` logs every call (logger ``fulmen.hooks``).

Plugins declare data; the kernel decides. The collect hooks yield records whose targets are
imported only when a user selects them, so listing plugins never imports a plugin's classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from fulmen.kernel.composed import Selection
    from fulmen.kernel.records import (
        AcceleratorSpec,
        EnvironmentSpec,
        LoggerSpec,
        NoticeSpec,
        PrecisionSpec,
        StrategySpec,
    )

PROJECT = "fulmen"
ENTRY_POINT_GROUP = "fulmen.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------- collect hooks


@hookspec
def fulmen_accelerators() -> Iterable[AcceleratorSpec]:
    """Declare the accelerators this plugin provides.

    Called once per process when plugins are first needed (a ``Trainer``, a ``Lite``,
    ``fulmen plugins``). Must not import the target classes or anything heavy.

    :return: an iterable of :class:`fulmen.AcceleratorSpec` (a generator is fine). Every name and
        alias must be unique across all plugins; a clash is a ``PluginError`` naming both plugins.

    Example::

        from fulmen import AcceleratorSpec, hookimpl

        @hookimpl
        def fulmen_accelerators():
            yield AcceleratorSpec(
                name="npu",
                target="my_npu.accelerator:NPUAccelerator",
                device_type="npu",
                description="Ascend NPUs through torch_npu",
            )
    """


@hookspec
def fulmen_strategies() -> Iterable[StrategySpec]:
    """Declare the distributed strategies this plugin provides.

    One class may back several names through ``init_kwargs``. Compatibility facts
    (``accelerators``, ``precisions``, ``max_devices``, ``multi_node``, ``interactive``) are checked
    by composition, and an incompatible selection names the strategies that would work.

    :return: an iterable of :class:`fulmen.StrategySpec`.

    Example::

        from fulmen import StrategySpec, hookimpl

        @hookimpl
        def fulmen_strategies():
            for name, kwargs in {"my_ddp": {}, "my_ddp_static": {"static_graph": True}}.items():
                yield StrategySpec(
                    name=name,
                    target="my_package.strategy:MyDDPStrategy",
                    init_kwargs=kwargs,
                    accelerators=["cpu", "cuda"],
                    description="DDP with my tweaks",
                )
    """


@hookspec
def fulmen_precisions() -> Iterable[PrecisionSpec]:
    """Declare the precision backends this plugin provides.

    ``deprecated_aliases`` are legacy names (``16`` for ``"16-mixed"``) accepted with a warning
    that shows the canonical name; integer precisions given by users are matched as strings.

    :return: an iterable of :class:`fulmen.PrecisionSpec`.

    Example::

        from fulmen import PrecisionSpec, hookimpl

        @hookimpl
        def fulmen_precisions():
            yield PrecisionSpec(
                name="fp8-mixed",
                target="my_fp8.precision:FP8Precision",
                accelerators=["cuda"],
                description="FP8 matmuls through transformer-engine",
            )
    """


@hookspec
def fulmen_environments() -> Iterable[EnvironmentSpec]:
    """Declare the cluster environments this plugin provides.

    A declared environment can be selected by name (``plugins=["my_cluster"]``). To be picked
    automatically, also implement :func:`fulmen_detect_environment`.

    :return: an iterable of :class:`fulmen.EnvironmentSpec`.

    Example::

        from fulmen import EnvironmentSpec, hookimpl

        @hookimpl
        def fulmen_environments():
            yield EnvironmentSpec(
                name="my_cluster",
                target="my_cluster.environment:MyClusterEnvironment",
                description="our in-house scheduler",
            )
    """


@hookspec
def fulmen_loggers() -> Iterable[LoggerSpec]:
    """Declare the experiment trackers (loggers) this plugin provides.

    A declared logger is selected by name: ``Trainer(logger="my_tracker")``,
    ``Trainer(logger=["csv", "my_tracker"])``, ``Lite(loggers="my_tracker")``, or
    ``--trainer.logger=my_tracker`` on the command line. The target must subclass
    :class:`fulmen.api.Logger` and keep the logger contract (docs/plugin-contracts.md), which
    ``fulmen plugins --check my_tracker`` checks. Put the tracker's client library in
    ``requires`` so that listing and errors can tell it is missing without importing it.

    :return: an iterable of :class:`fulmen.LoggerSpec`.

    Example::

        from fulmen import LoggerSpec, hookimpl

        @hookimpl
        def fulmen_loggers():
            yield LoggerSpec(
                name="my_tracker",
                target="my_tracker_fulmen.logger:MyTrackerLogger",
                requires=["my_tracker"],
                install="pip install my-tracker-fulmen",
                description="runs in My Tracker",
            )
    """


@hookspec
def fulmen_notices() -> Iterable[NoticeSpec]:
    """Declare the stop-notice sources this plugin provides (cloud spot and preemption notices,
    a scheduler's own announcement).

    A declared notice is selected by name: ``Trainer(plugins=["aws_spot"])``,
    ``Lite(plugins=["aws_spot"])``, or ``--trainer.plugins='[aws_spot]'`` on the command line.
    The target must subclass :class:`fulmen.api.notice.PreemptionNotice`; it is imported and
    built (with the record's ``init_kwargs``) only when the name is selected, so listing
    notices (``fulmen plugins``) imports none of them.

    :return: an iterable of :class:`fulmen.NoticeSpec`.

    Example::

        from fulmen import NoticeSpec, hookimpl

        @hookimpl
        def fulmen_notices():
            yield NoticeSpec(
                name="my_cloud_spot",
                target="my_cloud_fulmen.notice:MyCloudSpotNotice",
                init_kwargs={"interval": 5.0},
                description="My Cloud's spot reclaim notice (metadata endpoint)",
            )
    """


@hookspec
def fulmen_check_selection(selection: Selection) -> Iterable[str] | str | None:
    """Object to a composed selection this plugin cannot run.

    For checks across plugins. A check of one plugin instance belongs in its class's
    ``check_selection(selection)`` method (every base class has one), which composition calls
    on each selected plugin. Called on every plugin after composition resolved every
    argument. Each message should say what cannot work and what would. All messages from all
    plugins (and composition's own checks) are raised together in one ``ConfigurationError``.

    :param selection: the :class:`fulmen.kernel.compose.Selection` (accelerator, strategy,
        precision, environment instances, ``device_ids``, ``num_nodes``, ``interactive``).
    :return: a message, an iterable of messages, or ``None`` when there is nothing to object to.

    Example::

        from fulmen import hookimpl

        @hookimpl
        def fulmen_check_selection(selection):
            if selection.strategy.name == "my_ddp" and selection.num_nodes > 4:
                yield (f"strategy 'my_ddp' runs on at most 4 nodes, num_nodes={selection.num_nodes}"
                       " was given; use strategy='ddp' for more")
    """


@hookspec
def fulmen_checkpoint_layouts() -> Iterable[Any]:
    """Yield the checkpoint directory layouts this plugin's strategy writes, when they are not
    fulmen's canonical ones (:class:`fulmen.checkpoint.layouts.CheckpointLayout` instances or
    classes).

    ``fulmen checkpoint inspect|convert|verify|diff`` recognise a directory in a registered
    layout (``CheckpointLayout.detect``), show its tensors and convert it into a canonical
    checkpoint (``CheckpointLayout.read``). The checkpoint service (``fulmen.checkpoint.service``)
    hands such a directory to ``CheckpointLayout.load(strategy, path, weights_only)``, which
    reads it for a strategy that can (None: the service refuses it with the command that
    converts it), and writes through ``CheckpointLayout.save`` for a strategy whose
    ``checkpoint_layout`` names the layout. Importing the layout class must be cheap: it is
    imported when a checkpoint directory that is not DCP is read, not when plugins are listed.

    :return: layouts (or layout classes); collected from every plugin.

    Example::

        from fulmen import hookimpl
        from fulmen.checkpoint.layouts import CheckpointLayout

        class MyEngineLayout(CheckpointLayout):
            name = "my_engine"
            description = "my engine's checkpoint directory (engine.json and shard_*.pt)"

            def detect(self, path):
                return (path / "engine.json").is_file()

            def read(self, path):
                import torch

                weights = torch.load(path / "shard_0.pt", weights_only=True)
                return {"content": {}, "tensors": {f"state_dict.{k}": v
                                                   for k, v in weights.items()}}

        @hookimpl
        def fulmen_checkpoint_layouts():
            yield MyEngineLayout()
    """


# --------------------------------------------------------------------------- first-result hooks


@hookspec(firstresult=True)
def fulmen_detect_environment(environ: Mapping[str, str]) -> str | None:
    """Name the cluster environment this process runs under, or return ``None``.

    Read ``environ`` only: no imports with side effects, no network, no files. Use
    ``@hookimpl(tryfirst=True)`` for specific schedulers and ``trylast`` for catch-alls; the
    built-in ``local`` environment answers last. A user's own ``ClusterEnvironment`` passed in
    ``plugins=[...]`` or a name in ``plugins=["slurm"]`` skips detection.

    :param environ: the process environment (``os.environ``, or a dict in tests).
    :return: a registered environment name. Stops at the first non-None result.

    Example::

        from fulmen import hookimpl

        @hookimpl(tryfirst=True)
        def fulmen_detect_environment(environ):
            if "MYSCHED_JOB_ID" in environ and "MYSCHED_RANK" in environ:
                return "my_cluster"
            return None
    """


@hookspec(firstresult=True)
def fulmen_detect_accelerator() -> str | None:
    """Name the best accelerator available on this machine, for ``accelerator="auto"``.

    Answer only for your own hardware; return ``None`` when it is absent. ``cpu`` answers last.

    :return: a registered accelerator name. Stops at the first non-None result.

    Example::

        from fulmen import hookimpl

        @hookimpl(tryfirst=True)
        def fulmen_detect_accelerator():
            import importlib.util
            return "npu" if importlib.util.find_spec("torch_npu") else None
    """


@hookspec(firstresult=True)
def fulmen_default_strategy(
    accelerator: str, num_devices: int, num_nodes: int, interactive: bool,
    distributed_backend: str,
) -> str | None:
    """Name the strategy ``strategy="auto"`` should use.

    :param accelerator: canonical name of the selected accelerator.
    :param num_devices: devices per node after parsing ``devices``.
    :param num_nodes: number of nodes.
    :param interactive: True in a notebook or REPL, where re-launching the script cannot work.
    :param distributed_backend: the selected accelerator record's ``distributed_backend``
        (``""``: none, or the accelerator was passed as an instance). Implementations may leave
        out parameters they do not use.
    :return: a registered strategy name. Stops at the first non-None result.

    Example::

        from fulmen import hookimpl

        @hookimpl
        def fulmen_default_strategy(accelerator, num_devices, num_nodes, interactive):
            if accelerator == "npu" and num_devices > 1:
                return "my_ddp"
            return None
    """



def __getattr__(name: str) -> object:
    if name == "HOOK_KINDS":  # kind -> collect hook, from the one table (fulmen.kernel.kinds)
        from fulmen.kernel.kinds import HOOKS

        return HOOKS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
