"""The one-process checks: every kind against its base class's contract, through public API.

``check(kind, name, recorder, folder)`` records one verdict per clause of the kind and returns
what the runner needs next (for a strategy: whether it runs several processes).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import io
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import fulmen
from fulmen.api.logger import Logger
from fulmen.api.notice import PreemptionNotice
from fulmen.kernel import targets
from fulmen.testing import models
from fulmen.testing.clauses import PASS, SKIP, clauses_for
from fulmen.testing.logger_checks import check_logger
from fulmen.testing.notice_checks import check_notice
from fulmen.testing.record import (
    Broken,
    Recorder,
    Skip,
    defined_at,
    describe,
    exception_hint,
    locate,
)

BASES = {"accelerator": fulmen.Accelerator, "strategy": fulmen.Strategy,
         "precision": fulmen.Precision, "environment": fulmen.ClusterEnvironment,
         "logger": Logger, "notice": PreemptionNotice}


@functools.cache
def package_root(module: str) -> str | None:
    """The folder of the top-level package (or the file of the module) ``module`` is in."""
    top = module.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return os.path.abspath(next(iter(spec.submodule_search_locations)))
    return os.path.abspath(spec.origin) if spec.origin else None


def plugin_roots(obj: Any) -> tuple[str, ...]:
    """The folders of a plugin instance's own code: the packages of its class and of the bases
    that come from outside fulmen's kernel (a third-party subclass of a built-in strategy is
    located in its own package first; the built-in's package only when nothing else is)."""
    roots: list[str] = []
    for cls in type(obj).__mro__:
        module = cls.__module__
        if module.split(".")[0] in ("fulmen", "builtins", "abc", "torch"):
            continue
        root = package_root(module)
        if root and root not in roots:
            roots.append(root)
    return tuple(roots[:1])


def entry_for(kind: str, name: str) -> Any:
    entry = fulmen.get_plugin_manager().catalog().find(kind, name)
    if entry is None:
        raise Skip(f"no active plugin registers the {kind} {name!r}")
    return entry


def importable(entry: Any) -> None:
    """Skip when a third-party library the record's target needs is missing here (naming it,
    and how to install it where the record or the distribution says); fail when the target
    itself does not exist or raises on import (naming the target, the plugin and its
    distribution, at the last line of the plugin's own code on the way)."""
    record = entry.record
    missing = record.missing()
    if missing:  # the record names what it needs and it is not installed here
        how = f"; install it with: {record.install}" if record.install else ""
        raise Skip(f"needs {', '.join(missing)}, which is not installed here (the record's "
                   f"requires){how}")
    problem = entry.problem()
    if problem is not None:
        raise_for(problem, entry)


def raise_for(problem: Any, entry: Any) -> None:
    """The verdict for a target that cannot be imported (:mod:`fulmen.kernel.targets`)."""
    what = (f"{entry.record.kind} {entry.name!r} of {entry.plugin.describe()}: its target "
            f"{entry.record.target_path!r} cannot be imported: {problem.sentence()}")
    if problem.is_missing_dependency:
        raise Skip(what)
    hint = ("the record's target names a module or class the plugin does not have: correct "
            "the 'package.module:Class' string the record yields, or add what it names"
            if problem.case == targets.TARGET else
            "importing the target module raises: fix the plugin's code at the location given")
    raise Broken(what, hint, problem.where)


def load(kind: str, name: str) -> Any:
    """Construct ``name`` from its record; a missing third-party dependency is a skip."""
    entry = entry_for(kind, name)
    importable(entry)
    try:
        instance = entry.record.create()
    except ModuleNotFoundError as exc:  # the constructor imported what is missing
        raise_for(targets.from_error(exc, entry.record.target_path, entry.plugin), entry)
        raise
    assert isinstance(instance, BASES[kind]), (
        f"{kind} {name!r} constructs a {type(instance).__name__}, which does not subclass "
        f"fulmen.{BASES[kind].__name__}")
    return instance


def usable_accelerator(names: tuple[str, ...]) -> str:
    """``cpu`` if allowed (an empty list allows all), else the first available one."""
    if not names or "cpu" in names:
        return "cpu"
    for name in names:
        entry = fulmen.get_plugin_manager().catalog().find("accelerator", name)
        if entry is not None and entry.record.load().is_available():
            return name
    raise Skip(f"needs accelerator {' or '.join(names)}, none of which this machine has")


def check(kind: str, name: str, rec: Recorder, folder: Path, shared_with: str | None = None
          ) -> dict[str, Any]:
    """Record a verdict for every clause of ``kind``; ``shared_with``: a strategy name of the
    same class and launcher whose runs stand for this one's (only loading is checked here)."""
    if kind == "plugin":
        check_plugin(name, rec)
        return {}
    holder: dict[str, Any] = {}
    entry = fulmen.get_plugin_manager().catalog().find(kind, name)
    if entry is not None:  # an error while constructing is located in the plugin's package
        root = package_root(entry.record.target_path.split(":")[0])
        rec.roots = (root,) if root else ()

    def loads() -> None:
        holder["instance"] = load(kind, name)

    status = rec.clause("plugin.loads", loads)
    if status != PASS:
        why = rec.last if status == SKIP else "not run: plugin.loads failed"
        for clause in clauses_for(kind)[1:]:
            rec.result(clause.id, SKIP, why)
        return {}
    rec.roots = plugin_roots(holder["instance"])
    if shared_with is not None:
        return {"shares": shared_with}
    return CHECKS[kind](name, holder["instance"], rec, folder)


# ------------------------------------------------------------------ a plugin without names


def check_plugin(name: str, rec: Recorder) -> None:
    """A plugin that registers no names here: it failed to load (its import is retried, and
    located in its own code), or it is disabled (checked when the runner enabled it)."""
    from fulmen.kernel.plugin_info import ACTIVE, FAILED

    info = fulmen.get_plugin_manager().plugins[name]
    module = info.value.split(":")[0]
    root = package_root(module)
    rec.roots = (root,) if root else ()

    def loads() -> str:
        if info.status == ACTIVE:
            return ("disabled where the check started; loaded here with it enabled, its "
                    "names are checked below")
        if info.status != FAILED:
            raise Skip(f"{info.reason}; not checked: name it (fulmen plugins --check {name}) "
                       "to check it with it enabled")
        try:
            loaded = importlib.import_module(module)
            for part in info.value.partition(":")[2].split("."):
                if part:
                    loaded = getattr(loaded, part)
        except (Exception, SystemExit) as exc:
            where = locate(exc, rec.roots)
            problem = targets.from_error(exc, info.value, info)
            if problem.case == targets.TARGET:
                hint = (f"the entry point {info.value!r} names what the plugin does not have "
                        f"({problem.detail}): correct it in the distribution's entry points "
                        "(group 'fulmen.plugins')")
            elif problem.is_missing_dependency:
                hint = (f"{problem.sentence()}. A plugin's hook module must import without "
                        "the libraries its targets need: import them in the target modules, "
                        "and name them in the records' requires=[...]")
            elif where and rec.roots and where.startswith(rec.roots[0]):
                hint = f"importing {info.value!r} fails in the plugin's own code at {where}"
            else:
                hint = (f"importing {info.value!r} fails before any of the plugin's code runs: "
                        "look at the error")
            raise Broken(f"plugin {name!r} failed to load: {describe(exc, rec.roots)}", hint,
                         where) from exc
        raise Broken(f"plugin {name!r} failed to load: {info.reason}",
                     "the module imports; what failed is registering it (its hooks, or the "
                     "records they yield): see the reason", defined_at(loaded))

    rec.clause("plugin.loads", loads)


# ------------------------------------------------------------------ accelerator


def check_accelerator(name: str, acc: Any, rec: Recorder, folder: Path) -> dict[str, Any]:
    state: dict[str, Any] = {}

    def availability() -> None:
        available, count = type(acc).is_available(), type(acc).auto_device_count()
        require(isinstance(available, bool), f"is_available() returned {available!r}, not a bool",
                f"is_available returns a {type(available).__name__}: return True or False "
                "(bool(...) of what you computed)", acc, "is_available")
        require(isinstance(count, int) and not isinstance(count, bool) and count >= 0,
                f"auto_device_count() returned {count!r}, not an int >= 0",
                f"auto_device_count returns {type(count).__name__} {count!r}: return the number "
                "of devices as an int (0 when there are none)", acc, "auto_device_count")
        state["available"], state["count"] = available, count

    rec.clause("accelerator.availability", availability)

    def need_device() -> None:
        if "available" not in state:
            raise Skip("accelerator.availability failed")
        if not state["available"] or not state["count"]:
            note = type(acc).availability_note() or "no device"
            raise Skip(f"no {name} device on this machine ({note})")

    def parse() -> None:
        need_device()
        one = acc.parse_devices(1)
        require(one == [0], f"parse_devices(1) returned {one!r}, expected [0]",
                "a device count n means the first n indices, as a list of ints",
                acc, "parse_devices")
        every = acc.parse_devices("auto")
        require(every == list(range(state["count"])),
                f"parse_devices('auto') returned {every!r}, expected "
                f"{list(range(state['count']))} (auto_device_count() is {state['count']})",
                "'auto' means every device auto_device_count() reports; the two disagree",
                acc, "parse_devices")
        for bad in (0, "x", [0, 0]):
            try:
                got = acc.parse_devices(bad)
            except fulmen.ConfigurationError:
                continue
            require(False, f"parse_devices({bad!r}) returned {got!r} instead of raising "
                    "fulmen.ConfigurationError", f"{bad!r} is no valid device selection but "
                    "was accepted: raise fulmen.ConfigurationError naming it and what is valid",
                    acc, "parse_devices")

    def setup() -> None:
        need_device()
        devices = type(acc).get_parallel_devices([0])
        require(isinstance(devices, list) and len(devices) == 1 and all(
            isinstance(d, torch.device) and d.type == acc.device_type for d in devices),
            f"get_parallel_devices([0]) returned {devices!r}, expected "
            f"[torch.device({acc.device_type!r}, 0)]",
            f"return a list with one torch.device of type {acc.device_type!r} (device_type) "
            "per index given", acc, "get_parallel_devices")
        acc.setup_device(devices[0])
        torch.ones(2, device=devices[0]).sum().item()
        acc.teardown()

    rec.clause("accelerator.parse_devices", parse)
    rec.clause("accelerator.setup", setup)
    return {}


# ------------------------------------------------------------------ precision


def check_precision(name: str, precision: Any, rec: Recorder, folder: Path) -> dict[str, Any]:
    record = entry_for("precision", name).record
    state: dict[str, Any] = {}

    def forward_backward() -> None:
        acc_name = usable_accelerator(tuple(record.accelerators))
        acc = load("accelerator", acc_name)
        if not type(acc).is_available():
            raise Skip(f"no {acc_name} device on this machine")
        device = type(acc).get_parallel_devices([0])[0]
        precision.connect(acc.device_type)
        torch.manual_seed(0)
        with precision.module_init_context():
            model = torch.nn.Linear(4, 2)
        model = precision.convert_module(model).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        before = [p.detach().clone() for p in model.parameters()]
        x = precision.convert_input(torch.randn(8, 4, device=device))
        context_manager(precision, "forward_context")
        context_manager(precision, "module_init_context")

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            with precision.forward_context():
                out = model(x)
            loss = precision.convert_output(out).float().pow(2).mean()
            precision.backward(loss)
            return loss

        precision.optimizer_step(optimizer, closure)
        params = list(model.parameters())
        require(all(p.grad is not None for p in params), "backward left a parameter without "
                ".grad", "backward(loss) ran no backward pass: call loss.backward() (or "
                "run_backward) on the (scaled) loss", precision, "backward")
        require(all(bool(torch.isfinite(p).all()) for p in params), "a parameter is not "
                "finite after one step", "the step produced inf/nan: unscale gradients before "
                "the update and skip steps whose gradients are not finite", precision,
                "optimizer_step")
        changed = any(not torch.equal(a, b.detach()) for a, b in zip(before, params))
        require(changed, "optimizer_step did not change any parameter", "optimizer_step "
                "returned without updating: call optimizer.step(closure) (after unscaling)",
                precision, "optimizer_step")
        state["device_type"] = acc.device_type

    def round_trip() -> None:
        if "device_type" not in state:
            raise Skip("precision.forward_backward did not pass")
        saved = precision.state_dict()
        if not isinstance(saved, dict):
            raise Broken(f"state_dict() returned {type(saved).__name__}, not dict",
                         f"state_dict returns a {type(saved).__name__} ({short_repr(saved)}): "
                         "return a dict of plain tensors and numbers (an empty dict when there "
                         "is no state)", defined_at(type(precision).state_dict))
        buffer = io.BytesIO()
        torch.save(saved, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=True)
        fresh = load("precision", name)
        fresh.connect(state["device_type"])
        fresh.load_state_dict(loaded)
        again = fresh.state_dict()
        require(same(again, saved), f"load_state_dict(state) then state_dict() gives "
                f"{short_repr(again)}, not the saved {short_repr(saved)}",
                "load_state_dict does not restore what state_dict returned: store every entry "
                "it is given", precision, "load_state_dict")

    rec.clause("precision.forward_backward", forward_backward)
    rec.clause("precision.state", round_trip)
    return {}


KERNEL = os.path.dirname(os.path.abspath(fulmen.__file__)) + os.sep


def require(ok: bool, detail: str, hint: str, plugin: Any = None, member: str = "") -> None:
    """Fail the clause with what was observed unless ``ok``; located where the plugin's
    ``member`` is defined."""
    if not ok:
        where = ""
        if plugin is not None and member:
            found = getattr(type(plugin), member, None)
            where = defined_at(found.fget if isinstance(found, property) else found)
            if where.startswith(KERNEL):  # the base class's: the plugin has no line for it
                where = ""
        raise Broken(detail, hint, where)


def context_manager(plugin: Any, member: str) -> None:
    """``plugin.<member>()`` must return a context manager (entered and left once here)."""
    where = defined_at(getattr(type(plugin), member))
    try:
        context = getattr(plugin, member)()
    except Exception as exc:
        raise Broken(f"{member}() raised {describe(exc, plugin_roots(plugin))}",
                     exception_hint(exc, locate(exc, plugin_roots(plugin)),
                                    plugin_roots(plugin)),
                     locate(exc, plugin_roots(plugin)) or where) from exc
    kind = type(context)
    if not (callable(getattr(kind, "__enter__", None))
            and callable(getattr(kind, "__exit__", None))):
        if inspect.isgenerator(context):
            hint = (f"{member} is a generator function: decorate it with "
                    "@contextlib.contextmanager (and yield once)")
        elif context is None:
            hint = (f"{member} returns None: return a context manager "
                    "(contextlib.nullcontext() when there is nothing to enter)")
        else:
            hint = (f"{member} returns a {kind.__name__}, which has no __enter__/__exit__: "
                    "return a context manager, e.g. torch.autocast(...)")
        raise Broken(f"{member}() returned {short_repr(context)}, not a context manager",
                     hint, where)
    try:
        with context:
            pass
    except Exception as exc:
        raise Broken(f"entering or leaving {member}() raised "
                     f"{describe(exc, plugin_roots(plugin))}",
                     exception_hint(exc, locate(exc, plugin_roots(plugin)),
                                    plugin_roots(plugin)),
                     locate(exc, plugin_roots(plugin)) or where) from exc


def short_repr(value: Any, width: int = 60) -> str:
    text = f"tensor({value.tolist()})" if isinstance(value, torch.Tensor) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


# ------------------------------------------------------------------ environment


def check_environment(name: str, env: Any, rec: Recorder, folder: Path) -> dict[str, Any]:
    state: dict[str, Any] = {}

    def detect_pure() -> None:
        environ, cwd = dict(os.environ), os.getcwd()
        found = type(env).detect()
        after, now = dict(os.environ), os.getcwd()
        require(isinstance(found, bool), f"detect() returned {found!r}, not a bool",
                f"detect returns a {type(found).__name__}: return True or False", env, "detect")
        changed = sorted(k for k in environ.keys() | after.keys() if environ.get(k) != after.get(k))
        if changed:
            os.environ.clear()
            os.environ.update(environ)
        if now != cwd:
            os.chdir(cwd)
        require(not changed, f"detect() changed environment variables: {', '.join(changed)}",
                f"detect() wrote {', '.join(changed)}: only read os.environ there (set "
                "variables in the instance's methods, after selection)", env, "detect")
        require(now == cwd, f"detect() changed the working directory from {cwd} to {now}",
                "detect() must not chdir: only read os.environ", env, "detect")
        state["detected"] = found

    def ranks() -> str:
        try:
            external = env.creates_processes_externally
            assert isinstance(external, bool), (
                f"creates_processes_externally is {external!r}, not a bool")
            if not external:
                env.set_world_size(2)
                env.set_global_rank(1)
            world, rank = env.world_size(), env.global_rank()
            local, node = env.local_rank(), env.node_rank()
            address, port = env.main_address, env.main_port
        except Exception as exc:
            if state.get("detected") is False:
                raise Skip(f"not running under {name!r} here (detect() is False) and it cannot "
                           f"report ranks outside it: {type(exc).__name__}: {exc}") from exc
            raise
        values = {"world_size()": world, "global_rank()": rank, "local_rank()": local,
                  "node_rank()": node, "main_port": port}
        for what, value in values.items():
            require(isinstance(value, int) and not isinstance(value, bool),
                    f"{what} returned {value!r}, not an int",
                    f"{what} gives a {type(value).__name__}: convert what you read (environment "
                    "variables are text) with int()", env, what.rstrip("()"))
        require(isinstance(address, str) and bool(address), f"main_address is {address!r}",
                "return the host name or address of rank zero as a non-empty str", env,
                "main_address")
        require(1 <= port <= 65535, f"main_port is {port}, not a port number",
                "return a TCP port in 1..65535", env, "main_port")
        require(world >= 1 and 0 <= rank < world,
                f"global_rank() {rank} is not in range(world_size()={world})",
                "global_rank and world_size read different sources or one is off by one",
                env, "global_rank")
        require(0 <= local <= rank and node >= 0,
                f"local_rank() {local} / node_rank() {node} do not fit global_rank() {rank}",
                "a local rank is the rank within its node: 0 <= local_rank <= global_rank",
                env, "local_rank")
        if not external:
            require((world, rank) == (2, 1),
                    f"after set_world_size(2) and set_global_rank(1) the environment reports "
                    f"world size {world} and rank {rank}",
                    "creates_processes_externally is False, so fulmen computes the layout: "
                    "store what set_world_size/set_global_rank give and return it",
                    env, "set_world_size" if world != 2 else "set_global_rank")
        return f"world_size={world} rank={rank} external={external}"

    rec.clause("environment.detect_pure", detect_pure)
    rec.clause("environment.ranks", ranks)
    return {}


# ------------------------------------------------------------------ strategy


def trainer_args(folder: Path, **extra: Any) -> dict[str, Any]:
    return {"logger": False, "enable_progress_bar": False, "enable_model_summary": False,
            "enable_checkpointing": False, "num_sanity_val_steps": 0,
            "default_root_dir": str(folder), **extra}


def check_strategy(name: str, strategy: Any, rec: Recorder, folder: Path) -> dict[str, Any]:
    record = entry_for("strategy", name).record
    state: dict[str, Any] = {}
    folder.mkdir(parents=True, exist_ok=True)
    environ = dict(os.environ)

    def clause(clause_id: str, check: Any) -> None:
        try:
            rec.clause(clause_id, check)
        finally:  # a launcher may mark this process as a launched rank: undo for the next
            os.environ.clear()
            os.environ.update(environ)

    def accelerator() -> str:
        if "accelerator" not in state:
            state["accelerator"] = usable_accelerator(tuple(record.accelerators))
        return str(state["accelerator"])

    def trainer() -> None:
        trainer = fulmen.Trainer(accelerator=accelerator(), devices=1, strategy=name,
                                 max_steps=2, **trainer_args(folder))
        trainer.fit(models.KitModule(str(folder), "fit"))
        require(trainer.global_step == 2, f"trained {trainer.global_step} steps, not "
                "max_steps=2", "optimizer_step must return after stepping the optimizer once "
                "per call (the Trainer counts those calls)", strategy, "optimizer_step")
        seen = models.summary(folder, "fit")
        require(seen["steps"] == 2, f"training_step ran {seen['steps']} times, not 2",
                "step('training_step', ...) must call the module's training_step once",
                strategy, "step")
        require(not models.close(seen["weights"], seen["start_weights"], 0.0),
                "fit did not change a weight", "the optimizer stepped parameters other than "
                "the module's: setup_module must return the module whose parameters the "
                "optimizer holds (setup_optimizers adapts optimizers to it)", strategy,
                "setup_module")
        path = folder / "fit.ckpt"
        assert path.exists(), "trainer.save_checkpoint in on_train_end wrote no fit.ckpt"
        state["ckpt"], state["weights"] = path, seen["weights"]

    def checkpoint() -> None:
        if "ckpt" not in state:
            raise Skip("strategy.trainer did not pass")
        trainer = fulmen.Trainer(accelerator=accelerator(), devices=1, strategy=name,
                                 max_steps=4, **trainer_args(folder))
        trainer.fit(models.KitModule(str(folder), "resume"), ckpt_path=str(state["ckpt"]))
        seen = models.summary(folder, "resume")
        require(seen["start_step"] == 2 and seen["steps"] == 2,
                f"the resumed fit started at step {seen['start_step']} and ran "
                f"{seen['steps']} steps; expected 2 and 2",
                "the checkpoint's loops state did not come back: fulmen.checkpoint.service must "
                "read back what it wrote, as the strategy declares it (sharded_checkpoint, "
                "checkpoint_template, checkpoint_layout)", strategy, "checkpoint_template")
        require(models.close(seen["start_weights"], state["weights"]),
                "the weights at the start of the resumed fit differ from the saved ones",
                "load_module_state_dict must put the checkpoint's state_dict into the module "
                "being trained", strategy, "load_module_state_dict")

    def lite() -> None:
        lite = fulmen.Lite(accelerator=accelerator(), devices=1, strategy=name)
        out = lite.launch(lite_checks, str(folder))
        state["collectives"] = out["collectives"]
        state["lite_weights"] = out["full"]
        require(len(out["losses"]) == 2 and all(map(math.isfinite, out["losses"])),
                f"the Lite loop's losses are {out['losses']}", "Lite trained through "
                "setup_module/backward/optimizer_step: a loss that is not finite points at "
                "backward or optimizer_step", strategy, "backward")
        require(models.close(out["restored"], out["weights"]),
                "lite.load gave other weights than lite.save wrote",
                "module_state_dict (what lite.save writes) and load_module_state_dict (what "
                "lite.load restores) do not round-trip", strategy, "load_module_state_dict")
        assert "model" not in out["rest"] and out["rest"].get("step") == 2, (
            f"lite.load returned {out['rest']!r}; expected the saved 'step' (2) back and "
            "'model' loaded into the given module")

    def collectives() -> None:
        if "collectives" not in state:
            raise Skip("not run: strategy.lite did not finish")
        problems = state["collectives"]
        if problems:
            first = problems[0]
            raise Broken("; ".join(p["problem"] for p in problems), first["hint"],
                         first["where"])

    def matches() -> None:
        if "weights" not in state or "lite_weights" not in state:
            raise Skip("not run: strategy.trainer or strategy.lite did not pass")
        raise_if_differ({0: state["weights"]}, {0: state["lite_weights"]}, strategy)

    clause("strategy.trainer", trainer)
    clause("strategy.checkpoint", checkpoint)
    clause("strategy.lite", lite)
    clause("strategy.collectives", collectives)
    clause("strategy.lite_matches_trainer", matches)
    rec.result("strategy.no_backward_sync", SKIP, "needs two processes")
    return {}


def raise_if_differ(trainer: dict[int, list[float]], lite: dict[int, list[float]],
                    strategy: Any) -> None:
    """The weights each rank trained with the Trainer and with Lite (same data, same start)
    must agree; else :class:`Broken` with what differs and which member decides it."""
    comparable = [r for r in sorted(trainer) if r in lite and trainer[r] and lite[r]]
    if not comparable:
        raise Skip("module_state_dict() gives no values on one side (the state is held "
                   "elsewhere, e.g. by an engine): the weights cannot be compared")
    differ = [r for r in comparable if not models.close(trainer[r], lite[r])]
    if not differ:
        return
    sizes = [f"{len(trainer[r])} and {len(lite[r])} values" for r in differ
             if len(trainer[r]) != len(lite[r])]
    gap = max(max((abs(x - y) for x, y in zip(trainer[r], lite[r])), default=0.0)
              for r in differ)
    kind = type(strategy)
    step_customised = kind.step is not fulmen.Strategy.step
    where = defined_at(kind.step) if step_customised else ""
    if step_customised:
        hint = (f"{kind.__name__} overrides step(): the Trainer calls it for 'training_step' "
                "and Lite for 'forward' (each call of a set-up module); apply the same "
                "customisation to both methods (or move it to optimizer_step/backward, "
                "which both call)")
    else:
        hint = (f"{kind.__name__} trains differently under Lite although both call the same "
                "members: look for state kept per Trainer (run_config) or per call site")
    what = f"module_state_dict() holds {sizes[0]}" if sizes else \
        f"largest difference {gap:.3g}"
    raise Broken(f"after 2 steps on the same data the Trainer and Lite weights differ on "
                 f"rank(s) {differ} ({what})", hint, where)


def layout(name: str) -> dict[str, Any]:
    """How ``devices=2`` runs ``name`` here, found by composing a Trainer (nothing runs):
    ``{"accelerator", "processes", "launcher", "why"}``. Names of one class with the same
    launcher and layout differ only in constructor arguments and may share runs."""
    environ = dict(os.environ)
    entry = fulmen.get_plugin_manager().catalog().find("strategy", name)
    if entry is None:
        return {"processes": 0, "why": f"no active plugin registers {name!r}"}
    out: dict[str, Any] = {"group": entry.record.target_path}
    try:
        importable(entry)
    except Skip as exc:
        return {"processes": 0, "why": str(exc), **out}
    except Broken:
        return {"processes": 0, "why": "not run: plugin.loads failed", **out}
    try:
        out["accelerator"] = accelerator = usable_accelerator(tuple(entry.record.accelerators))
        trainer = fulmen.Trainer(accelerator=accelerator, devices=2, strategy=name,
                                 logger=False, enable_progress_bar=False)
    except Skip as exc:
        return {"processes": 0, "why": str(exc)}
    except Exception as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__  # whole: the cause is in it
        if "accelerator" not in out:
            raise
        if isinstance(exc, ModuleNotFoundError):  # as in load(): the constructor imports it
            problem = targets.from_error(exc, entry.record.target_path, entry.plugin)
            if problem.is_missing_dependency:
                return {"processes": 0, "why": problem.sentence(), **out}
        limit = entry.record.max_devices
        if isinstance(exc, fulmen.ConfigurationError) and limit is not None and limit < 2:
            return {"processes": 0, "why": f"its record allows {limit} device: {why}", **out}
        # The record does not rule out devices=2, so failing to compose it is a broken promise.
        return {"processes": 0, "error": f"Trainer(devices=2, strategy={name!r}) cannot be "
                f"composed: {type(exc).__name__}: {why}", **out}
    finally:
        os.environ.clear()
        os.environ.update(environ)
    launcher = trainer.launcher
    out["launcher"] = None if launcher is None else f"{type(launcher).__module__}:" \
        f"{type(launcher).__qualname__}"
    out["processes"] = trainer.world_size
    if trainer.world_size < 2:
        out["why"] = f"devices=2 runs in one process (world size {trainer.world_size})"
    return out


def lite_checks(lite: fulmen.Lite, folder: str) -> dict[str, Any]:
    """In the launched process: train, save and load, then the collectives."""
    out = models.lite_train(lite, folder)
    out.pop("mesh")  # not returned across processes
    return {**out, "collectives": collective_problems(lite)}


def collective_problems(owner: Any) -> list[dict[str, Any]]:
    """Run every collective once through ``owner.strategy`` (a Lite or Trainer, inside the run,
    on every rank); what differs from the contract, each ``{"rank", "call", "problem", "hint",
    "where"}`` (``where``: the plugin's line that raised, or where the member is defined)."""
    strategy = owner.strategy
    rank, world = strategy.global_rank, strategy.world_size
    roots = plugin_roots(strategy)
    problems: list[dict[str, Any]] = []

    def add(call: str, member: str, problem: str, hint: str, where: str = "") -> None:
        problems.append({"rank": rank, "call": call, "problem": f"rank {rank}: {problem}",
                         "hint": hint,
                         "where": where or defined_at(getattr(type(strategy), member))})

    def run(call: str, member: str, function: Any) -> tuple[bool, Any]:
        try:
            return True, function()
        except Exception as exc:
            where = locate(exc, roots)
            add(call, member, f"{call} raised {describe(exc, roots)}",
                exception_hint(exc, where, roots), where)
            return False, None

    def judge(call: str, member: str, got: Any, want: Any, mine: Any, what: str) -> None:
        """``got`` against ``want``; ``mine`` is this rank's own input (returned unchanged:
        nothing was exchanged)."""
        if agrees(got, want):
            return
        if got is None:
            hint = (f"{member} returns None: return the result ({what}) on every rank, "
                    "not only where it was computed")
        elif world > 1 and same(got, mine):
            hint = (f"{member} returned this rank's own input unchanged: nothing was "
                    f"exchanged between the {world} processes ({what})")
        elif isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor) \
                and tuple(got.shape) != tuple(want.shape):
            hint = (f"{member} gave shape {tuple(got.shape)}, expected {tuple(want.shape)}: "
                    f"{what}")
        else:
            hint = f"{member} must give {what}"
        add(call, member, f"{call} gave {short_repr(got)}, expected {short_repr(want)}", hint)

    device = strategy.root_device
    mine = torch.tensor(float(rank + 1), device=device)
    ok, total = run("reduce(tensor(rank + 1), 'sum')", "reduce",
                    lambda: strategy.reduce(mine.clone(), "sum"))
    if ok:
        judge("reduce(tensor(rank + 1), 'sum')", "reduce", as_cpu(total),
              torch.tensor(float(world * (world + 1) / 2)), as_cpu(mine),
              "the sum of every rank's tensor")
    mine = torch.tensor(float(rank), device=device)
    ok, mean = run("reduce(tensor(rank), 'mean')", "reduce",
                   lambda: strategy.reduce(mine.clone(), "mean"))
    if ok:
        judge("reduce(tensor(rank), 'mean')", "reduce", as_cpu(mean),
              torch.tensor((world - 1) / 2), as_cpu(mine), "the sum over ranks / world size")
    mine = torch.tensor([rank, 7], device=device)
    ok, gathered = run("all_gather(tensor([rank, 7]))", "all_gather",
                       lambda: strategy.all_gather(mine.clone()))
    if ok:
        got = as_cpu(gathered)
        if world == 1 and same(got, as_cpu(mine)):  # Lightning adds no dimension for one process
            got = got.unsqueeze(0)
        judge("all_gather(tensor([rank, 7]))", "all_gather", got,
              torch.tensor([[r, 7] for r in range(world)]), as_cpu(mine),
              f"one entry per rank stacked on a new first dimension, shape ({world}, 2)")
    for src in sorted({0, world - 1}):
        call = f"broadcast({{'rank': rank}}, src={src})"
        ok, got = run(call, "broadcast", lambda s=src: strategy.broadcast({"rank": rank}, s))
        if ok:
            judge(call, "broadcast", got, {"rank": src}, {"rank": rank},
                  f"rank {src}'s object on every rank")
    ok, agreement = run("start_agreement(10 + rank)", "start_agreement",
                        lambda: strategy.start_agreement(10 + rank))
    if ok:
        if not callable(agreement):
            add("start_agreement(10 + rank)", "start_agreement",
                f"start_agreement returned {short_repr(agreement)}, not a function",
                "return a function that gives the agreed value when called")
        else:
            ok, agreed = run("start_agreement(10 + rank)()", "start_agreement", agreement)
            if ok:
                judge("start_agreement(10 + rank)()", "start_agreement", agreed,
                      10 + world - 1, 10 + rank, "the largest value of any rank")
    run("barrier('fulmen-testing')", "barrier", lambda: strategy.barrier("fulmen-testing"))
    return problems


def agrees(got: Any, want: Any) -> bool:
    """A collective's result against the contract's: tensors by shape and value (a reduction
    of a scalar may come back as a number or a one-element tensor), the rest by equality."""
    if isinstance(want, torch.Tensor) and want.ndim == 0:
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        return isinstance(got, int | float) and not isinstance(got, bool) and \
            abs(float(got) - float(want)) <= 1e-5
    if isinstance(want, torch.Tensor):
        return isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape) and \
            bool(torch.allclose(got.float(), want.float()))
    return same(got, want)


def as_cpu(value: Any) -> Any:
    """A tensor result on the CPU (compared there); anything else as it is."""
    return value.detach().cpu() if isinstance(value, torch.Tensor) else value


def reductions(events: Any) -> int:
    """How many gradient reductions (all-reduce, reduce-scatter) a profile saw."""
    return sum(1 for e in events if e.name.startswith("c10d::") and "reduce" in e.name
               and "broadcast" not in e.name)


def sync_problems(lite: fulmen.Lite, mesh: Any = None) -> dict[str, Any]:
    """A forward and backward inside ``lite.no_backward_sync(model)`` must issue fewer
    reductions (all-reduce, reduce-scatter) than the same outside it, where the gradients are
    synchronised (when the strategy overrides ``no_backward_sync``: it claims to skip; tensor
    parallelism's own reductions happen in both). Counted with torch's profiler (collectives
    of every backend torch dispatches: gloo, nccl, ...). ``mesh``: what the training loop
    parallelised its model on (``models.lite_train``)."""
    strategy = lite.strategy
    kind = type(strategy)
    if kind.no_backward_sync is fulmen.Strategy.no_backward_sync:
        return {"claims": False}
    from torch.profiler import ProfilerActivity, profile

    model = lite.setup_module(models.parallelize_on(models.make_net(), mesh))
    optimizer = lite.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(lite.global_rank))
    x = lite.to_device(x)
    with profile(activities=[ProfilerActivity.CPU]) as inside, lite.no_backward_sync(model):
        lite.backward(model(x).float().pow(2).mean())
    with profile(activities=[ProfilerActivity.CPU]) as after:
        lite.backward(model(x).float().pow(2).mean())
    optimizer.step()
    optimizer.zero_grad()
    return {"claims": True, "inside": reductions(inside.events()),
            "after": reductions(after.events()), "replicas": strategy.data_parallel_size,
            "where": defined_at(kind.no_backward_sync)}


CHECKS: dict[str, Callable[[str, Any, Recorder, Path], dict[str, Any]]] = {
    "accelerator": check_accelerator, "precision": check_precision,
    "environment": check_environment, "strategy": check_strategy, "logger": check_logger,
    "notice": check_notice}
