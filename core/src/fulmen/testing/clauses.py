"""The clauses of the plugin contracts the kit checks: a name, what it promises, how to fix it.

A clause is data; the checks that prove it live in :mod:`fulmen.testing.checks` (one process)
and :mod:`fulmen.testing.distributed` (two processes). No torch, no plugin code here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fulmen.testing.logger_clauses import LOGGER_CLAUSES

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass(frozen=True)
class Clause:
    """``id`` (``"strategy.collectives"``), the kind it applies to, the promise, the fix."""

    id: str
    kind: str
    promise: str
    fix: str


@dataclass
class Result:
    """One clause checked for one registered name."""

    kind: str
    name: str
    clause: str
    status: str
    detail: str = ""
    plugin: str = ""
    distribution: str = ""
    hint: str = ""  # computed from what was observed
    where: str = ""  # the plugin's file:line, where there is one
    ranks: tuple[int, ...] = ()  # the ranks that broke it (two-process runs)

    @property
    def fix(self) -> str:
        """What the clause asks for, in general (``hint`` is specific to this failure)."""
        return CLAUSES[self.clause].fix if self.clause in CLAUSES else ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "clause": self.clause,
                "status": self.status, "detail": self.detail, "plugin": self.plugin,
                "distribution": self.distribution, "hint": self.hint, "where": self.where,
                "ranks": list(self.ranks), "fix": self.fix}


_ALL = [
    Clause("plugin.loads", "*", "the record's target imports and constructs from its init_kwargs",
           "make the record's target 'module:Class' importable, its constructor accept the "
           "record's init_kwargs, and the class subclass the fulmen.api base of its kind"),
    Clause("accelerator.availability", "accelerator",
           "is_available() returns a bool and auto_device_count() an int >= 0",
           "return a bool from is_available() and an int >= 0 from auto_device_count()"),
    Clause("accelerator.parse_devices", "accelerator",
           "parse_devices(1) == [0], 'auto' gives every device, a bad value raises "
           "ConfigurationError",
           "inherit Accelerator.parse_devices or return a list of ints and raise "
           "fulmen.ConfigurationError for devices it cannot use"),
    Clause("accelerator.setup", "accelerator",
           "get_parallel_devices([0]) gives torch.devices of device_type; setup_device and "
           "teardown run on them",
           "return torch.device(device_type, i) from get_parallel_devices and make "
           "setup_device/teardown accept them"),
    Clause("precision.forward_backward", "precision",
           "a module converted by convert_module runs forward in forward_context, backward "
           "and optimizer_step update finite parameters",
           "convert_module must keep the module trainable; backward must call backward on the "
           "loss; optimizer_step must step the optimizer (after unscaling)"),
    Clause("precision.state", "precision",
           "state_dict() is a dict that survives torch.save/torch.load and load_state_dict on a "
           "new instance gives the same state",
           "return plain tensors/numbers from state_dict() and restore them in load_state_dict()"),
    Clause("environment.detect_pure", "environment",
           "the static detect() returns a bool and leaves os.environ and the working directory "
           "unchanged",
           "make detect() a @staticmethod that only reads os.environ (no setenv, chdir or "
           "files written)"),
    Clause("environment.ranks", "environment",
           "world_size(), global_rank(), local_rank(), node_rank() are consistent ints, "
           "main_address a str, main_port an int, and set_world_size/set_global_rank are "
           "honoured when the environment does not create processes",
           "return ints with 0 <= local_rank <= global_rank < world_size; when "
           "creates_processes_externally is False store what set_world_size/set_global_rank "
           "give"),
    Clause("strategy.trainer", "strategy",
           "Trainer(strategy=NAME, devices=1).fit trains max_steps steps",
           "drive the step through Strategy.step/backward/optimizer_step and return the "
           "module from setup_module"),
    Clause("strategy.checkpoint", "strategy",
           "trainer.save_checkpoint writes a checkpoint that Trainer.fit(ckpt_path=...) resumes "
           "from (same weights, same global_step)",
           "declare sharded_checkpoint/checkpoint_template (or checkpoint_layout) truthfully "
           "so that fulmen.checkpoint.service round-trips what the Trainer hands over, and "
           "make module_state_dict/load_module_state_dict the module's full state"),
    Clause("strategy.lite", "strategy",
           "Lite(strategy=NAME, devices=1) sets up a module and optimizer, trains, and "
           "lite.save/lite.load round-trip the weights",
           "implement setup_module/setup_optimizers/backward/optimizer_step and the "
           "state and checkpoint declarations of fulmen.Strategy"),
    Clause("strategy.collectives", "strategy",
           "reduce (sum, mean), all_gather, broadcast, start_agreement and barrier give the "
           "documented results on every rank",
           "reduce must combine every rank's tensor (mean = sum / world_size), all_gather "
           "stack one entry per rank on a new first dim, broadcast return src's object "
           "everywhere, start_agreement's function return the largest value of any rank, "
           "barrier return on every rank"),
    Clause("strategy.processes", "strategy",
           "with devices=2 the strategy starts both processes (create_launcher) and each one "
           "reports its own global rank and world size 2 before the timeout",
           "return a launcher from create_launcher() that starts processes_per_node processes "
           "(or inherit one from a built-in strategy); a strategy that cannot run several "
           "processes must say so in its record (max_devices=1)"),
    Clause("strategy.trainer_processes", "strategy",
           "Trainer(strategy=NAME, devices=2).fit trains on every rank and the ranks see "
           "different samples",
           "use the distributed sampler (inherit process_dataloader) and synchronise "
           "gradients or parameters across ranks"),
    Clause("strategy.lite_processes", "strategy",
           "Lite(strategy=NAME, devices=2) trains on every rank and lite.save/lite.load "
           "round-trip the weights",
           "write checkpoints from rank zero only (or collectively) and make every rank able "
           "to load them"),
    Clause("strategy.lite_matches_trainer", "strategy",
           "Lite(strategy=NAME) trains the same weights as Trainer(strategy=NAME) on the same "
           "data, on every rank: Lite sends a set-up module's forward through "
           "Strategy.step('forward', ...) as the Trainer sends training_step through "
           "Strategy.step('training_step', ...)",
           "customise the training forward in Strategy.step for method 'forward' (Lite) as "
           "for 'training_step' (Trainer), or in optimizer_step/backward, which both call"),
    Clause("strategy.no_backward_sync", "strategy",
           "a strategy that overrides no_backward_sync() reduces no gradient in a forward and "
           "backward inside it, and still reduces them in the backward after it",
           "make no_backward_sync() switch synchronisation off for everything it encloses "
           "(DDP decides in the forward: DistributedDataParallel.no_sync()), and leave it on "
           "outside"),
]

_ALL += [Clause(*clause) for clause in LOGGER_CLAUSES]  # the logger kind's (own module)
_ALL += [
    Clause("notice.describe", "notice",
           "describe() returns one line, per_node is a bool, window is positive seconds or None",
           "return a one-line string from describe(); set per_node (True when the notice is "
           "about the machine) and window (seconds of notice, when known) as class attributes"),
    Clause("notice.watch", "notice",
           "start(announce) returns within 5 s, announces nothing while no stop is scheduled, "
           "and stop() returns within 5 s with every thread start() began ended",
           "poll or wait in a daemon thread of your own (never on the training thread), "
           "announce only what was received, and make stop() end and join that thread"),
]

CLAUSES: dict[str, Clause] = {c.id: c for c in _ALL}


def clauses_for(kind: str) -> list[Clause]:
    """The clauses a plugin of ``kind`` is held to, in the order they are checked."""
    return [c for c in _ALL if c.kind in (kind, "*")]
