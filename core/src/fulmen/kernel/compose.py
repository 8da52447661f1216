"""Composition: Trainer/Lite selection arguments → one frozen :class:`Selection`.

Each argument is ``"auto"``, a registered name or alias, or an instance. ``"auto"`` is answered by
the first-result hooks; compatibility comes from the records' facts and the
``fulmen_check_selection`` hook. Every problem is collected and raised in one
``ConfigurationError``. Nothing here knows a backend by name.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from fulmen.api import CheckpointIO, ClusterEnvironment, Launcher, Precision, Strategy
from fulmen.api.naming import as_messages
from fulmen.api.notice import PreemptionNotice
from fulmen.errors import (
    ConfigurationError,
    FulmenDeprecationWarning,
    FulmenError,
    PluginError,
    format_choices,
)
from fulmen.kernel.catalog import PLURAL, Catalog, Entry
from fulmen.kernel.composed import Selection
from fulmen.kernel.kinds import TABLE
from fulmen.kernel.known_plugins import KNOWN
from fulmen.kernel.manager import PluginManager, get_plugin_manager
from fulmen.kernel.records import load_target

BASES: dict[str, type] = {k.name: load_target(k.base, f"the {k.name} kind") for k in TABLE}


def is_interactive() -> bool:
    """True in a REPL or notebook, where a script cannot be launched again."""
    return hasattr(sys, "ps1") or bool(sys.flags.interactive) or "ipykernel" in sys.modules


class _Composer:
    def __init__(self, manager: PluginManager, catalog: Catalog) -> None:
        self.manager, self.catalog = manager, catalog
        self.errors: list[FulmenError] = []

    def fail(self, error: str | FulmenError) -> None:
        self.errors.append(ConfigurationError(error) if isinstance(error, str) else error)

    def pick(self, kind: str, value: Any, argument: str) -> tuple[Entry | None, Any]:
        """(record entry, instance or None); an error is noted and (None, None) returned."""
        if isinstance(value, BASES[kind]):
            return self.catalog.find_for_instance(kind, value), value
        if isinstance(value, str | int) and not isinstance(value, bool):
            try:
                entry = self.catalog.select(kind, value, argument)
            except FulmenError as exc:
                self.fail(exc)
                return None, None
            if self.catalog.is_deprecated_alias(entry, value):
                warnings.warn(f"{argument}={value!r} is a legacy spelling; use "
                              f"{argument}={entry.name!r}", FulmenDeprecationWarning, stacklevel=5)
            return entry, None
        self.fail(f"{argument}={value!r}: expected a registered {kind} name or a "
                  f"{BASES[kind].__name__} instance, got {type(value).__name__}. Registered "
                  f"{PLURAL[kind]}: {format_choices(self.catalog.names(kind))}.")
        return None, None

    def auto(self, hook: str, kind: str, why: str, **kwargs: Any) -> str | None:
        name, _ = self.manager.first_result(hook, **kwargs)
        if name is None:
            self.fail(f"{kind}='auto': no plugin answered {hook} ({why}). Pass one of "
                      f"{format_choices(self.catalog.names(kind))} explicitly.")
        return name

    def sort_plugins(self, plugins: Sequence[Any]) -> dict[str, Any]:
        """Split ``plugins=[...]`` into one environment, precision and checkpoint IO at most,
        and any number of stop-notice sources (``notices``: instances, or registered notice
        names built from their records)."""
        roles = {"environment": ClusterEnvironment, "precision": Precision,
                 "checkpoint_io": CheckpointIO}
        by_name = ("environment", "precision", "notice")
        found: dict[str, Any] = {"notices": []}
        for item in plugins:
            if isinstance(item, PreemptionNotice):
                found["notices"].append(item)
                continue
            role = next((r for r, base in roles.items() if isinstance(item, base)), None)
            if role is None and isinstance(item, str):
                role = next((k for k in by_name if self.catalog.find(k, item)), None)
            why = None if role or not isinstance(item, str) else next(
                (w for k in sorted(by_name, key=lambda k: item.strip().lower() not in KNOWN.get(
                    k, {})) if (w := self.catalog.unavailable(k, item, "plugins"))), None)
            if why is not None:
                self.fail(why)
            elif role == "notice":
                self.add_notice(found["notices"], item)
            elif role is None and isinstance(item, str):
                self.fail(
                    f"plugins=[{item!r}]: no active plugin registers an environment, a precision "
                    f"or a stop notice named {item!r}."
                    + next((h for k in by_name if (h := self.catalog.suggest(k, item))), "")
                    + self.registered_for_plugins() + self.catalog.not_loaded_note(item)
                )
            elif role is None:
                self.fail(
                    f"plugins=[...] got {item!r} of type {type(item).__name__}, which fulmen does "
                    "not know. It takes ClusterEnvironment, Precision, CheckpointIO and "
                    "PreemptionNotice instances, or registered names:"
                    + self.registered_for_plugins()
                )
            elif role in found:
                self.fail(f"plugins=[...] holds two {role.replace('_', ' ')}s: {found[role]!r} and "
                          f"{item!r}; pass only one")
            else:
                found[role] = item
        return found

    def registered_for_plugins(self) -> str:
        """`` Environments: ...; precisions: ...; stop notices: ....`` (what ``plugins=[...]``
        takes by name)."""
        return (f" Environments: {format_choices(self.catalog.names('environment'))}; "
                f"precisions: {format_choices(self.catalog.names('precision'))}; stop notices: "
                f"{format_choices(self.catalog.names('notice'))}.")

    def add_notice(self, notices: list[Any], name: str) -> None:
        """Build the notice a registered name selects; the same one twice is a mistake."""
        entry = self.catalog.select("notice", name, "plugins")
        if any(n.name == entry.name for n in notices):
            self.fail(f"plugins=[...] names the stop notice {entry.name!r} twice; pass it once")
            return
        try:
            notices.append(entry.create())
        except FulmenError as exc:
            self.fail(exc)

    def check_facts(self, acc: Any, strat: Any, prec: Any, env: ClusterEnvironment,
                    names: dict[str, tuple[str, ...]], num_devices: int, num_nodes: int,
                    interactive: bool) -> None:
        """Compare the records' declared compatibility; name what would work instead."""
        acc_name, strat_name, prec_name = names["accelerator"][0], names["strategy"][0], \
            names["precision"][0]

        def fits(allowed: tuple[str, ...], kind: str) -> bool:
            return not allowed or bool(set(allowed) & set(names[kind]))

        def strategies_for(keep: Any) -> str:
            return format_choices(self.catalog.matching("strategy", keep))

        if strat is not None:
            if not fits(strat.accelerators, "accelerator"):
                self.fail(f"strategy {strat_name!r} does not run on accelerator {acc_name!r} (it "
                          f"runs on {format_choices(strat.accelerators)}). Strategies for "
                          f"{acc_name!r}: "
                          f"{strategies_for(lambda r: fits(r.accelerators, 'accelerator'))}.")
            if strat.needs_distributed_backend and acc is not None and \
                    not acc.distributed_backend:
                self.fail(f"strategy {strat_name!r} joins a torch.distributed process group, and "
                          f"accelerator {acc_name!r} names no distributed backend for device "
                          f"type {acc.device_type!r}. Accelerators with one: "
                          + format_choices(self.catalog.matching(
                              "accelerator", lambda r: bool(r.distributed_backend)))
                          + ". A vendor package registers its backend with torch.distributed."
                          "Backend.register_backend(..., devices=[...]) before the Trainer or "
                          "Lite is built; or pass the strategy as an instance with "
                          "process_group_backend=...")
            if strat.max_devices is not None and num_devices > strat.max_devices:
                self.fail(f"strategy {strat_name!r} drives at most {strat.max_devices} device(s) "
                          f"per node, but {num_devices} were selected. Strategies for several "
                          f"devices: {strategies_for(lambda r: (r.max_devices or 2) > 1)}.")
            if num_nodes > 1 and not strat.multi_node:
                self.fail(f"strategy {strat_name!r} runs on one node, but num_nodes={num_nodes}. "
                          f"Multi-node strategies: {strategies_for(lambda r: r.multi_node)}.")
            if interactive and not strat.interactive and not env.creates_processes_externally:
                self.fail(f"strategy {strat_name!r} cannot start its processes from a notebook "
                          "or REPL. Strategies that can: "
                          f"{strategies_for(lambda r: r.interactive)}.")
            if not fits(strat.precisions, "precision"):
                self.fail(f"strategy {strat_name!r} does not support precision {prec_name!r}; "
                          f"it supports {format_choices(strat.precisions)}.")
        if prec is not None:
            if not fits(prec.accelerators, "accelerator"):
                self.fail(f"precision {prec_name!r} is not available on accelerator {acc_name!r}"
                          f" (only on {format_choices(prec.accelerators)}). Precisions for "
                          f"{acc_name!r}: " + format_choices(self.catalog.matching(
                              "precision", lambda r: fits(r.accelerators, "accelerator"))) + ".")
            if not fits(prec.strategies, "strategy"):
                self.fail(f"precision {prec_name!r} does not work with strategy {strat_name!r} "
                          f"(only with {format_choices(prec.strategies)}).")
        try:
            env.validate_settings(num_devices=num_devices, num_nodes=num_nodes)
        except ConfigurationError as exc:
            self.fail(exc)
            return
        if env.creates_processes_externally:
            self.check_ranks(env)

    def check_ranks(self, env: ClusterEnvironment) -> None:
        """Processes started by someone else: their ranks must fit their world size (a rank at
        or above it waits forever for peers that do not exist)."""
        try:
            rank, world, local = env.global_rank(), env.world_size(), env.local_rank()
        except ConfigurationError as exc:
            self.fail(exc)
            return
        if not (0 <= rank < world and 0 <= local < world):
            self.fail(f"cluster environment {env.name!r} says this process is rank {rank} (local "
                      f"rank {local}) of world size {world}: every rank must be below the world "
                      "size. Check the rank variables the launcher set (`fulmen doctor` lists "
                      "them).")

    def raise_errors(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigurationError("this selection cannot work:\n  - "
                                     + "\n  - ".join(map(str, self.errors)))


def compose(accelerator: Any = "auto", strategy: Any = "auto", devices: Any = "auto",
            num_nodes: Any = 1, precision: Any = "32-true", plugins: Sequence[Any] | None = None,
            *, environ: Mapping[str, str] | None = None,
            interactive: bool | None = None) -> Selection:
    """Resolve the selection arguments of a Trainer or Lite (see the module docstring)."""
    manager = get_plugin_manager()
    c = _Composer(manager, manager.catalog())
    environ = os.environ if environ is None else environ
    interactive = is_interactive() if interactive is None else interactive
    extra = c.sort_plugins(list(plugins or []))
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        c.fail(f"num_nodes={num_nodes!r} must be a positive int (1 for a single machine)")
        num_nodes = 1

    env_value = extra.get("environment")
    if env_value is None:
        env_value = c.auto("fulmen_detect_environment", "environment",
                           "is the 'local' plugin disabled?", environ=environ)
    env_entry, env = c.pick("environment", env_value, "plugins") if env_value else (None, None)
    if env is None and env_entry is not None:
        env = env_entry.create()

    if accelerator == "auto":
        accelerator = c.auto("fulmen_detect_accelerator", "accelerator",
                             "is the 'cpu' plugin disabled?")
    acc_entry, acc = c.pick("accelerator", accelerator, "accelerator") if accelerator else (None,
                                                                                           None)
    device_ids: list[int] = []
    if acc is None and acc_entry is not None:
        acc = acc_entry.create()
    if acc is not None:
        acc_name = acc.name
        if not acc.is_available():
            usable = [e.name for e in c.catalog.entries("accelerator") if _available(e)]
            note = acc.availability_note()
            c.fail(f"accelerator={accelerator!r}: no {acc_name} device was found"
                   f"{f' ({note})' if note else ''}. Available here: {format_choices(usable)}.")
        else:
            try:
                device_ids = acc.parse_devices(devices)
            except ConfigurationError as exc:
                c.fail(exc)
        if strategy == "auto" and device_ids:
            strategy = c.auto("fulmen_default_strategy", "strategy",
                              f"nothing runs {len(device_ids)} {acc_name} device(s) on "
                              f"{num_nodes} node(s)", accelerator=acc_name,
                              num_devices=len(device_ids), num_nodes=num_nodes,
                              interactive=interactive, distributed_backend=(
                                  acc_entry.record.distributed_backend if acc_entry else ""))
    strat_entry, strat = (c.pick("strategy", strategy, "strategy")
                          if strategy not in (None, "auto") else (None, None))
    prec_value = extra.get("precision", precision)
    if "precision" in extra and precision not in ("32-true", 32, "32", None):
        c.fail(f"precision={precision!r} and plugins=[{extra['precision']!r}] both set the "
               "precision; keep one")
    prec_entry, prec = c.pick("precision", prec_value, "precision")

    picked = {"accelerator": (acc_entry, acc), "strategy": (strat_entry, strat),
              "precision": (prec_entry, prec)}
    if env is not None and all(e is not None or i is not None for e, i in picked.values()):
        names = {k: ((i.name,) if i is not None else ()) + (e.record.names if e else ())
                 for k, (e, i) in picked.items()}
        c.check_facts(acc_entry.record if acc_entry else None,
                      strat_entry.record if strat_entry else None,
                      prec_entry.record if prec_entry else None,
                      env, names, len(device_ids), num_nodes, interactive)
    c.raise_errors()

    assert acc is not None and env is not None  # every error above was raised
    strat = strat or strat_entry.create()  # type: ignore[union-attr]
    prec = prec or prec_entry.create()  # type: ignore[union-attr]
    strat.attach(accelerator=acc, precision=prec, cluster_environment=env,
                 parallel_devices=acc.get_parallel_devices(device_ids), num_nodes=num_nodes,
                 checkpoint_io=extra.get("checkpoint_io"))
    strat.launcher = launcher = _create_launcher(strat, strat_entry)
    selection = Selection(env, acc, strat, prec, launcher,
                          extra.get("checkpoint_io"), tuple(device_ids), num_nodes, interactive,
                          tuple(extra["notices"]))
    for plugin in (env, acc, strat, prec):  # each selected plugin's own check (a base method)
        for message in as_messages(plugin.check_selection(selection)):
            c.fail(message)
    for _, message in manager.collect("fulmen_check_selection", selection=selection):
        c.fail(str(message))
    c.raise_errors()
    return selection


def _create_launcher(strategy: Strategy, entry: Entry | None) -> Launcher | None:
    """Ask the strategy for its launcher; a broken answer names the strategy and its plugin."""
    label = f"strategy {strategy.name!r} ({type(strategy).__module__}:" \
            f"{type(strategy).__qualname__}{f', from {entry.plugin.describe()}' if entry else ''})"
    try:
        launcher = strategy.create_launcher()
    except FulmenError:
        raise
    except Exception as exc:
        raise PluginError(f"{label}: create_launcher() raised {type(exc).__name__}: {exc}"
                          ) from exc
    if launcher is not None and not isinstance(launcher, Launcher):
        raise PluginError(f"{label}: create_launcher() returned {type(launcher).__name__}; it "
                          "must return a fulmen.Launcher or None")
    env = strategy.cluster_environment
    processes = strategy.processes_per_node * strategy.num_nodes
    if launcher is None and processes > 1 and not env.creates_processes_externally:
        raise ConfigurationError(
            f"{label} needs {processes} processes ({strategy.processes_per_node} per node x "
            f"num_nodes={strategy.num_nodes}), but its create_launcher() returned None and the "
            f"{env.name!r} cluster environment does not start processes either, so the run "
            "would wait for peers that never come. Start the processes with a launcher "
            "(torchrun, srun...), use devices=1, or have create_launcher() return a launcher "
            "(e.g. fulmen_strategies.launchers.ScriptLauncher(self)).")
    return launcher


def _available(entry: Entry) -> bool:
    try:
        return bool(entry.record.load().is_available())
    except Exception:
        return False
