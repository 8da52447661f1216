"""No package reads another package's private state, and no kernel or plugin code probes with
``hasattr``: whatever one part needs from another is a public member of a base class in
``fulmen.api`` (see docs/plugin-contracts.md). An AST walk over the source of every
distribution enforces it:

(a) ``x._name`` (also ``getattr``/``setattr``/``hasattr``/``delattr`` with a ``"_name"`` literal),
    non-dunder, where ``x`` is not ``self``, ``cls`` or ``super()``, is an error unless ``_name``
    is defined in the same distribution (a def, a class, a variable, an import, a module, or an
    attribute set on ``self``/``cls``): a package may use its own helpers, never another's.
(b) ``hasattr(...)`` is an error.

``EXCEPTIONS`` lists each deliberate case with its reason; anything new fails with the file,
line and code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBES = ("getattr", "setattr", "hasattr", "delattr")


def distributions() -> dict[str, Path]:
    found = {name: ROOT / name / "src"
             for name in ("core", "accelerators", "strategies", "precision", "environments")}
    found.update({f"plugins/{p.parent.name}": p for p in sorted(ROOT.glob("plugins/*/src"))})
    return found


_FSDP2_MANUAL = ("FSDP2 has no public way to run its forward hooks around a manual-optimization "
                 "training_step that is not the root's forward; torch's own "
                 "register_fsdp_forward_method calls the same _pre_forward/_post_forward "
                 "(fsdp/manual.py)")

#: (file relative to the repository, attribute name or ``hasattr(...)`` code) -> why it is fine.
_LAZY_LOAD = ("Lightning's _lazy_load (litgpt imports it): torch's checkpoint pickles name "
              "torch._utils/_tensor's rebuild functions, which the lazy unpickler replaces, and "
              "torch offers no public way to read one storage record of the zip as a typed "
              "storage (a port of Lightning's fabric/utilities/load.py)")
_LIGHTNING_DEMO = ("a verbatim port of Lightning's transformer demo, which gives torch's "
                   "MultiheadAttention the public reset_parameters it lacks (pytorch#107909), so a "
                   "model materialised from the meta device is initialised as under Lightning")

_REMOVE_HOOKS = ("Lightning's remove_module_hooks (DeepSpeed ZeRO-3 leaves hooks behind): torch "
                 "offers no public way to drop every hook of a module")

EXCEPTIONS: dict[tuple[str, str], str] = {
    # --- ports of Lightning's public helpers (names libraries import under fulmen run) whose
    # documented behaviour is the probe or the torch internal itself
    ("core/src/fulmen/dropin/finder.py", "_getframe"):
        "sys._getframe: the interpreter's documented frame access; a served module tells "
        "`from x import y` (an ImportError naming y) from `getattr(x, 'y', None)` (an "
        "AttributeError, so hasattr works) by the calling instruction",
    ("core/src/fulmen/callbacks/pruning.py", "hasattr(m, n)"):
        "ModelPruning checks that the parameter names the user passed exist on the user's "
        "modules (Lightning's rule and message)",
    ("core/src/fulmen/utilities/parsing.py", "hasattr(owner, attribute)"):
        "lightning_hasattr/getattr/setattr look a user's attribute up on the model, its hparams "
        "and the datamodule: the probe is the documented behaviour",
    ("core/src/fulmen/utilities/layer_sync.py", "hasattr(model, 'qconfig')"):
        "torch's quantization sets qconfig only on modules prepared for it; reverting "
        "SyncBatchNorm keeps it where it was (Lightning's TorchSyncBatchNorm.revert)",
    ("core/src/fulmen/utilities/distributed.py", "_rebuild_buckets"):
        "torch's DDP reducer has no public way to prepare a backward run inside the wrapped "
        "forward (Lightning's _sync_module_states/prepare_for_backward helper)",
    ("core/src/fulmen/utilities/migration.py", "_gpus_arg_default"):
        "old Lightning checkpoints pickle a reference to this private function; the legacy "
        "patch puts it back so they unpickle (Lightning's pl_legacy_patch)",
    ("core/src/fulmen/utilities/module_hooks.py", "_backward_hooks"): _REMOVE_HOOKS,
    ("core/src/fulmen/utilities/module_hooks.py", "_is_full_backward_hook"): _REMOVE_HOOKS,
    ("core/src/fulmen/utilities/module_hooks.py", "_forward_hooks"): _REMOVE_HOOKS,
    ("core/src/fulmen/utilities/module_hooks.py", "_forward_pre_hooks"): _REMOVE_HOOKS,
    ("core/src/fulmen/utilities/module_hooks.py", "_state_dict_hooks"): _REMOVE_HOOKS,
    ("core/src/fulmen/utilities/module_hooks.py", "_load_state_dict_pre_hooks"): _REMOVE_HOOKS,
    # --- the standard library and the interpreter, not a plugin
    ("strategies/src/fulmen_strategies/launchers/lifetime.py", "_exit"):
        "os._exit: the stdlib's documented exit without cleanup (a forked/launched child)",
    ("strategies/src/fulmen_strategies/launchers/script.py", "_exit"):
        "os._exit: the stdlib's documented exit without cleanup (the watcher thread)",
    ("core/src/fulmen/hang.py", "_exit"):
        "os._exit: the hang doctor ends a rank whose main thread waits inside a collective "
        "nothing can interrupt",
    ("strategies/src/fulmen_strategies/launchers/multiprocessing.py", "_exit"):
        "os._exit: a spawned worker that re-imported an unguarded script ends without cleanup",
    ("core/src/fulmen/compiling.py", "_orig_mod"):
        "torch.compile's OptimizedModule keeps the user's module there and offers no public "
        "accessor (Lightning unwraps it the same way)",
    ("strategies/src/fulmen_strategies/ddp/strategy.py", "_rebuild_buckets"):
        "torch's DDP reducer has no public way to prepare a backward run inside the wrapped "
        "forward (manual optimization; Lightning's DDP strategy relies on the same reducer)",
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_get_fsdp_state"): _FSDP2_MANUAL,
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_pre_forward"): _FSDP2_MANUAL,
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_post_forward"): _FSDP2_MANUAL,
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_register_pre_backward_hook"):
        _FSDP2_MANUAL,
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_training_state"): _FSDP2_MANUAL,
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_cast_forward_inputs"): _FSDP2_MANUAL,
    ("strategies/src/fulmen_strategies/fsdp/manual.py", "_lazy_init"): _FSDP2_MANUAL,
    ("core/src/fulmen/checkpoint/reading.py", "_get_layout"):
        "DCP metadata pickles name torch.serialization._get_layout for tensor layouts; the safe "
        "unpickler allows exactly that function (torch's own weights_only loader does too)",
    ("core/src/fulmen/dropin/lazy_load.py", "_tensor"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_utils"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_rebuild_from_type_v2"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_rebuild_parameter"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_rebuild_tensor_v2"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_element_size"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_typed_storage"): _LAZY_LOAD,
    ("core/src/fulmen/dropin/lazy_load.py", "_untyped_storage"): _LAZY_LOAD,
    ("core/src/fulmen/hang.py", "_current_frames"):
        "sys._current_frames: the interpreter's documented way to read the main thread's stack "
        "from the hang doctor's thread",
    ("core/src/fulmen/demos/transformer.py", "hasattr(MultiheadAttention, '_reset_parameters')"):
        _LIGHTNING_DEMO,
    ("core/src/fulmen/demos/transformer.py", "hasattr(MultiheadAttention, 'reset_parameters')"):
        _LIGHTNING_DEMO,
    ("core/src/fulmen/demos/transformer.py", "_reset_parameters"): _LIGHTNING_DEMO,
    ("core/src/fulmen/kernel/compose.py", "hasattr(sys, 'ps1')"):
        "probes the interpreter: sys.ps1 exists only in an interactive session",
    ("core/src/fulmen/lite.py", "_lite_launches"):
        "lite.py's own marker on the run() it wraps, set and read in that file",
    # --- duck typing of the user's objects (Lightning accepts the same objects)
    ("core/src/fulmen/apply.py", "hasattr(obj, '_fields')"):
        "namedtuple detection; _fields is namedtuple's documented API",
    ("core/src/fulmen/lite.py", "hasattr(target, 'load_state_dict')"):
        "lite.load restores any user object with load_state_dict (Fabric does the same)",
    ("core/src/fulmen/lite.py", "hasattr(value, 'state_dict')"):
        "lite.save stores any user object with state_dict (Fabric does the same)",
    ("core/src/fulmen/trainer/data.py", "hasattr(loader, '__iter__')"):
        "a user's dataloader may be any iterable",
    ("core/src/fulmen/trainer/optim.py", "hasattr(config.scheduler, 'step')"):
        "a user's LR scheduler may be any object with step/state_dict (as in Lightning)",
    ("core/src/fulmen/trainer/optim.py", "hasattr(config.scheduler, 'state_dict')"):
        "a user's LR scheduler may be any object with step/state_dict (as in Lightning)",
    # --- third-party libraries' private API, where they offer no public one
    ("core/src/fulmen/trainer/results.py", "_update_count"):
        "torchmetrics: whether a Metric was updated before compute() (Lightning reads it too)",
    ("core/src/fulmen/trainer/results.py", "_forward_cache"):
        "torchmetrics: the value of the last forward() (Lightning reads it too)",
    ("plugins/deepspeed/src/fulmen_deepspeed/strategy.py", "_is_mkldnn_fp16_supported"):
        "torch has no public query for float16 CPU kernels; guarded by try/except",
    ("plugins/horovod/src/fulmen_horovod/sync_batchnorm.py", "_BatchNorm"):
        "torch's base of every BatchNorm*d (torch.nn.SyncBatchNorm.convert_sync_batchnorm "
        "matches on it too)",
    ("plugins/fairscale/src/fulmen_fairscale/ddp_sharded/strategy.py", "_opt_called"):
        "torch's LRScheduler protocol: what it records when optimizer.step() ran",
    ("plugins/fairscale/src/fulmen_fairscale/ddp_sharded/strategy.py", "_grad_hooks"):
        "fairscale's ShardedDataParallel has no public way to unregister its gradient hooks; a "
        "second fit on one Trainer replaces the reducer, whose hooks must stop reducing",
    ("plugins/fairscale/src/fulmen_fairscale/ddp_sharded/strategy.py", "_all_states"):
        "FairScale OSS keeps the gathered shards there after consolidate_state_dict; no public "
        "way to free them",
    ("plugins/horovod/src/fulmen_horovod/optimizers.py", "_handles"):
        "Horovod 0.28: pending allreduces of a DistributedOptimizer; no public accessor",
    ("plugins/horovod/src/fulmen_horovod/optimizers.py", "_opt_called"):
        "torch's LRScheduler protocol: what it records when optimizer.step() ran",
    ("plugins/horovod/src/fulmen_horovod/optimizers.py", "_wrapped_by_lr_sched"):
        "torch's LRScheduler protocol: marks an optimizer.step it has wrapped",
    ("plugins/horovod/src/fulmen_horovod/optimizers.py",
     "hasattr(new.step, '_wrapped_by_lr_sched')"):
        "torch's LRScheduler protocol: marks an optimizer.step it has wrapped",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == "super"


def definitions(trees: dict[str, ast.AST]) -> set[str]:
    """Every name a distribution defines."""
    names = {Path(path).stem for path in trees}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and _own(node.value):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def violations(trees: dict[str, ast.AST]) -> Iterator[tuple[str, int, str, str]]:
    """``(path, line, key, code)`` for each breach; ``key`` is what EXCEPTIONS lists."""
    defined = definitions(trees)
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value) \
                    and node.attr not in defined:
                yield path, node.lineno, node.attr, ast.unparse(node)
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id == "hasattr":
                yield path, node.lineno, ast.unparse(node), ast.unparse(node)
            elif node.func.id in PROBES and len(node.args) >= 2 and not _own(node.args[0]) \
                    and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str) and _private(node.args[1].value) \
                    and node.args[1].value not in defined:
                yield path, node.lineno, node.args[1].value, ast.unparse(node)


def parse(src: Path) -> dict[str, ast.AST]:
    return {str(f.relative_to(ROOT)): ast.parse(f.read_text(), str(f))
            for f in sorted(src.rglob("*.py"))}


@pytest.mark.parametrize(("dist", "src"), list(distributions().items()),
                         ids=list(distributions()))
def test_no_private_reads_across_packages_and_no_hasattr(dist: str, src: Path) -> None:
    found = [f"{path}:{line}: {code}" for path, line, key, code in violations(parse(src))
             if (path, key) not in EXCEPTIONS]
    assert not found, (
        f"{dist} reaches into private state it does not define, or probes with hasattr:\n  "
        + "\n  ".join(found) + "\nUse (or add) a documented public member of a base class in "
        "fulmen.api (docs/plugin-contracts.md); a deliberate exception goes in EXCEPTIONS with "
        "its reason.")


def test_every_distribution_is_scanned() -> None:
    names = set(distributions())
    assert {"core", "strategies", "precision", "plugins/deepspeed", "plugins/fairscale"} <= names
    assert all(any(src.rglob("*.py")) for src in distributions().values())


def test_the_walk_catches_what_it_must_and_allows_own_state() -> None:
    """Crafted snippets: another package's private attribute, a private getattr, hasattr."""
    plugin = ast.parse(
        "class Strategy:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def step(self, module, precision):\n"
        "        a = self._mine + super()._base() + module.__dict__['x']\n"
        "        b = precision._unscaled\n"
        "        c = getattr(module, '_trainer', None)\n"
        "        d = _helper(module._mine)\n"
        "        return hasattr(precision, 'scaler')\n"
        "def _helper(x):\n"
        "    return x\n")
    found = [(line, key) for _, line, key, _ in violations({"pkg/strategy.py": plugin})]
    assert sorted(found) == [(6, "_unscaled"), (7, "_trainer"),
                             (9, "hasattr(precision, 'scaler')")]


def test_the_contracts_page_names_every_public_member_of_every_base_class() -> None:
    """docs/plugin-contracts.md is the one page of contracts: a new public member of a base
    class in fulmen.api must be documented there."""
    import dataclasses

    from fulmen.api import (
        Accelerator,
        CheckpointIO,
        ClusterEnvironment,
        Launcher,
        LaunchOwner,
        Precision,
        RunConfig,
        Strategy,
    )

    page = (ROOT / "docs" / "plugin-contracts.md").read_text()
    instance_attributes = {"launcher", "parallel_devices", "num_nodes", "sync_batchnorm",
                           "module", "model", "run_config"}  # set in Strategy.__init__
    missing = []
    for base in (Accelerator, Strategy, Precision, ClusterEnvironment, CheckpointIO, Launcher,
                 LaunchOwner):
        members = {n for n in (*vars(base), *getattr(base, "__annotations__", {}))
                   if not n.startswith("_")}
        if base is Strategy:
            members |= instance_attributes
        missing += [f"{base.__name__}.{n}" for n in sorted(members)
                    if not re.search(rf"[`.]{n}\b", page)]
    missing += [f"RunConfig.{f.name}" for f in dataclasses.fields(RunConfig)
                if f"`{f.name}`" not in page]
    assert not missing, f"docs/plugin-contracts.md does not document: {missing}"


def trainer_private_reads(tree: ast.AST) -> list[str]:
    """``<...>trainer._name`` reads (``trainer._x``, ``self.trainer._x``, ``self._trainer._x``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = ast.unparse(node.value).rpartition(".")[2]
            if base in ("trainer", "_trainer"):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_reads_the_trainers_private_state() -> None:
    """The Trainer's collaborators — ``Module``, the loops, the hook table, optimization,
    metrics, callbacks, the tuner — use its public members only (``trainer.metrics``,
    ``trainer.optimization``, ``trainer.run_state``, ``trainer.hooks``...)."""
    src = ROOT / "core" / "src" / "fulmen"
    found = [f"{f.relative_to(ROOT)}:{line}" for f in sorted(src.rglob("*.py"))
             if f != src / "trainer" / "trainer.py"
             for line in trainer_private_reads(ast.parse(f.read_text()))]
    assert not found, "reads of Trainer privates:\n  " + "\n  ".join(found)


def test_the_trainer_check_catches_a_private_read() -> None:
    snippet = ast.parse("def f(self):\n    self.trainer._results.log()\n    self._trainer = 1\n")
    assert trainer_private_reads(snippet) == ["2: self.trainer._results"]
