"""Plan and run the checks: which names, which processes, every one with a timeout.

The runner imports neither torch nor plugin code: it reads the catalog (names, plugins,
distributions) and starts ``python -m fulmen.testing.worker`` processes. A process that hangs
is killed at its timeout and the clause it was in fails; a process that dies fails its clause
with its exit status and the end of its output; the next names run in a new process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fulmen.errors import ConfigurationError, did_you_mean, format_choices
from fulmen.testing.clauses import FAIL, PASS, SKIP, Result, clauses_for
from fulmen.testing.ranks import crash_hint, hint_for, read_ranks, stopped
from fulmen.testing.record import read

KINDS = ("accelerator", "precision", "environment", "strategy", "logger", "notice")
PROCESS_CLAUSES = ("strategy.processes", "strategy.trainer_processes", "strategy.lite_processes",
                   "strategy.no_backward_sync")
RANK_VARIABLES = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
                  "GROUP_RANK", "LOCAL_WORLD_SIZE", "FULMEN_LAUNCHED")


@dataclass(frozen=True)
class Target:
    """One registered name to check, with the plugin and distribution that provide it."""

    kind: str
    name: str
    plugin: str
    distribution: str
    group: str  # the record's target: names that share it differ only in constructor arguments
    state: str = ""  # for kind "plugin": "failed" or "disabled" (a plugin with no names here)
    asked: str = ""  # for kind "plugin": the unknown name asked for that it might provide


@dataclass(frozen=True)
class Verdict:
    status: str
    detail: str = ""
    hint: str = ""
    where: str = ""
    ranks: tuple[int, ...] = ()


@dataclass
class Report:
    """Every verdict of a run, and how long it took."""

    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.status == FAIL]

    @property
    def ok(self) -> bool:
        return not self.failures

    def for_name(self, kind: str, name: str) -> dict[str, Result]:
        return {r.clause: r for r in self.results if (r.kind, r.name) == (kind, name)}

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "seconds": round(self.seconds, 1),
                "results": [r.as_dict() for r in self.results]}


ORDER = ("plugin", *KINDS)  # a plugin that did not load is listed first


def select_targets(names: Sequence[str] | None = None) -> list[Target]:
    """``names``: registered names or aliases (``ddp``), or plugin (entry-point) names meaning
    every name that plugin registers; none: every active plugin's names, and every plugin that
    failed or is disabled (as a ``"plugin"`` target: it has no names here). A failed plugin
    named is checked (its import is retried and located); a disabled one named is checked with
    it enabled for the check."""
    from fulmen.kernel.manager import get_plugin_manager
    from fulmen.kernel.plugin_info import ACTIVE

    manager = get_plugin_manager()
    catalog = manager.catalog()
    every = [Target(kind, e.name, e.plugin.name, e.plugin.distribution or "(runtime)",
                    e.record.target_path)
             for kind in KINDS for e in catalog.entries(kind)]
    inactive = {name: Target("plugin", name, name, info.distribution or "(runtime)",
                             info.value, info.status)
                for name, info in manager.plugins.items() if info.status != ACTIVE}
    if not names:
        return sorted([*every, *inactive.values()],
                      key=lambda t: (ORDER.index(t.kind), t.name))
    chosen: list[Target] = []
    for given in names:
        key = str(given).strip().lower()
        hits = [t for t in every if t.plugin == key]
        for kind in KINDS:
            entry = catalog.find(kind, key)
            if entry is not None:
                hits += [t for t in every if (t.kind, t.name) == (kind, entry.name)]
        hits += [t for name, t in inactive.items() if name.lower() == key]
        if not hits:  # a plugin that is not loaded may provide it: check it, as if named
            hits = [replace(inactive[name], asked=str(given))
                    for name in suspects(manager, given) if name in inactive]
        if not hits:
            plugins = sorted({t.plugin for t in every} | set(inactive))
            known = sorted({t.name for t in every})
            hint = (" Name one of them to check it: fulmen plugins --check PLUGIN."
                    if inactive else "")
            raise ConfigurationError(
                f"{given!r} is neither a registered name nor an installed plugin."
                f"{did_you_mean(key, [*known, *plugins])} Plugins: {format_choices(plugins)}; "
                f"names: {format_choices(known)}.{catalog.not_loaded_note(given)}{hint}")
        for t in hits:
            if t not in chosen:
                chosen.append(t)
    return sorted(chosen, key=lambda t: (ORDER.index(t.kind), t.name))


def suspects(manager: Any, given: str) -> list[str]:
    """The plugins (their keys in ``manager.plugins``) that failed or are disabled and may
    provide the unknown name ``given``: the failed plugin that yielded it before failing, else
    those whose name relates to it (:func:`fulmen.kernel.catalog.related_to`)."""
    from fulmen.kernel.catalog import related_to

    catalog = manager.catalog()
    key_of = {id(info): key for key, info in manager.plugins.items()}
    withheld = catalog.withheld_by(given)
    if withheld is not None:
        return [key_of[id(withheld)]]
    return [key_of[id(i)] for i in catalog.not_loaded(given) if related_to(given, i)]


class Runner:
    """Runs the checks of ``targets``; ``progress(line)`` hears what starts."""

    def __init__(self, timeout: float = 120.0, exhaustive: bool = False,
                 progress: Callable[[str], None] | None = None) -> None:
        self.timeout, self.exhaustive = timeout, exhaustive
        self.progress = progress or (lambda line: None)
        self.verdicts: dict[tuple[str, str, str], Verdict] = {}
        self.plans: dict[tuple[str, str], dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.layouts: dict[str, dict[str, Any]] = {}  # strategy name -> how devices=2 runs
        self.enabled: set[str] = set()  # disabled plugins this run checks with them enabled

    def run(self, targets: Sequence[Target]) -> Report:
        start = time.monotonic()
        targets = self.enable(targets)
        strategies = [t for t in targets if t.kind == "strategy"]
        with tempfile.TemporaryDirectory(prefix="fulmen-check-") as tmp:
            root = Path(tmp)
            # The two-process runs start as soon as the one-process worker has told how each
            # strategy runs with devices=2, and go on beside it (one core each, on two).
            thread = threading.Thread(target=self.processes, args=(strategies, root),
                                      daemon=True)
            self.local(list(targets), root / "local",
                       on_layouts=thread.start if strategies else None)
            if strategies and not thread.is_alive() and not self.layouts:
                thread.start()  # the worker died before it could tell: plans only
            if strategies:
                thread.join()
            self.copy_shared(strategies)
        report = Report(seconds=time.monotonic() - start)
        for t in targets:
            for clause in clauses_for(t.kind):
                v = self.verdicts.get((t.kind, t.name, clause.id),
                                      Verdict(FAIL, "the kit recorded no verdict"))
                detail = v.detail
                if t.asked and clause.id == "plugin.loads":
                    detail += (f" [checked for {t.asked!r}, which no active plugin registers: "
                               "this plugin is not loaded, so its names are unknown, and its "
                               "name relates to it]")
                report.results.append(Result(t.kind, t.name, clause.id, v.status, detail,
                                             t.plugin, t.distribution, v.hint, v.where,
                                             v.ranks))
        return report

    def enable(self, targets: Sequence[Target]) -> list[Target]:
        """A disabled plugin among ``targets`` is checked with it enabled: its names, found by
        a worker that loads it, join the targets (every worker of this run loads it)."""
        disabled = [t for t in targets if t.kind == "plugin" and t.state == "disabled"]
        if not disabled:
            return list(targets)
        self.enabled |= {t.name for t in disabled}
        with tempfile.TemporaryDirectory(prefix="fulmen-check-") as tmp:
            folder = Path(tmp)
            failure = run_job({"mode": "list", "plugins": sorted(self.enabled),
                               "folder": str(folder)}, folder, self.timeout, enabled=self.enabled)
            found = [Target(line["kind"], line["name"], line["plugin"], line["distribution"],
                            line["group"]) for line in read(folder / "results.jsonl")
                     if line.get("event") == "target"]
        if failure:
            for t in disabled:
                self.note(t, "plugin.loads", FAIL, f"enabled for the check, it did not load: "
                          f"{failure}", crash_hint(failure, "plugin.loads"))
        extra = [t for t in found if t not in targets]
        return sorted([*targets, *extra], key=lambda t: (ORDER.index(t.kind), t.name))

    def note(self, t: Target, clause: str, status: str, detail: str, hint: str = "",
             where: str = "", ranks: Sequence[int] = ()) -> None:
        """Keep the worst verdict per clause: fail over pass over skip."""
        key = (t.kind, t.name, clause)
        rank = {FAIL: 2, PASS: 1, SKIP: 0}
        with self.lock:
            old = self.verdicts.get(key)
            if old is None or rank[status] > rank[old.status]:
                self.verdicts[key] = Verdict(status, detail, hint, where, tuple(ranks))
            elif status == FAIL == old.status and detail and detail not in old.detail:
                # the one-process and the two-process run both failed it: keep both
                self.verdicts[key] = Verdict(FAIL, f"{old.detail}; then: {detail}",
                                             old.hint or hint, old.where or where,
                                             tuple(sorted({*old.ranks, *ranks})))

    def replace(self, t: Target, clause: str, status: str, detail: str) -> None:
        """Set a verdict over a pass or skip (a two-process run that never reached a clause
        replaces its one-process pass: that pass says nothing about several processes)."""
        with self.lock:
            old = self.verdicts.get((t.kind, t.name, clause))
            if old is None or old.status != FAIL:  # a failure found on one process stays
                self.verdicts[(t.kind, t.name, clause)] = Verdict(status, detail)

    # ------------------------------------------------------------------ one process

    def local(self, targets: list[Target], folder: Path,
              on_layouts: Callable[[], None] | None = None) -> None:
        remaining = list(targets)
        attempt = 0
        while remaining:
            attempt += 1
            work = folder / f"try{attempt}"
            work.mkdir(parents=True)
            self.progress("checking " + ", ".join(f"{t.kind} {t.name!r}" for t in remaining))
            job = {"mode": "local", "targets": [[t.kind, t.name] for t in remaining],
                   "folder": str(work), "share": not self.exhaustive}
            timeout = self.timeout * len([t for t in remaining if t.kind in ("strategy", "logger")]
                                         or [1])  # each of these trains; a logger several times

            def poll(path: Path = work / "results.jsonl",
                     wanted: frozenset[str] = frozenset(
                         t.name for t in remaining if t.kind == "strategy")) -> None:
                nonlocal on_layouts
                if on_layouts is None:
                    return
                found = {line["name"]: line for line in read(path) if line["event"] == "layout"}
                if found and wanted <= set(found):
                    self.layouts.update(found)
                    start, on_layouts = on_layouts, None
                    start()

            failure = run_job(job, work, timeout, poll, self.enabled)
            poll()
            lines = read(work / "results.jsonl")
            by_key = {(t.kind, t.name): t for t in remaining}
            done: set[tuple[str, str]] = set()
            current: tuple[Target, str] | None = None
            for line in lines:
                t = by_key.get((line["kind"], line["name"]))
                if t is None:
                    continue
                if line["event"] == "start":
                    current = (t, line["clause"])
                elif line["event"] == "result":
                    self.note(t, line["clause"], line["status"], line["detail"],
                              line.get("hint", ""), line.get("where", ""))
                    current = None
                elif line["event"] == "plan":
                    self.plans[(t.kind, t.name)] = line
                    done.add((t.kind, t.name))
            if failure is None:
                for t in remaining:
                    if (t.kind, t.name) not in done:
                        self.note(t, "plugin.loads", FAIL, "the check process ended early")
                return
            stuck = current[0] if current else next(
                (t for t in remaining if (t.kind, t.name) not in done), None)
            if stuck is None:
                return
            clause = current[1] if current else "plugin.loads"
            self.note(stuck, clause, FAIL, failure, crash_hint(failure, clause))
            for c in clauses_for(stuck.kind):
                self.note(stuck, c.id, SKIP, f"not run: {clause} did not finish")
            done.add((stuck.kind, stuck.name))
            remaining = [t for t in remaining if (t.kind, t.name) not in done]

    # ------------------------------------------------------------------ two processes

    def processes(self, strategies: list[Target], root: Path) -> None:
        """The two-process run of every strategy that makes two processes of devices=2 (one
        per class and launcher unless exhaustive)."""
        for t in strategies:
            plan = self.layouts.get(t.name) or self.plans.get((t.kind, t.name), {})
            if plan.get("shares"):
                continue
            if plan.get("error"):
                self.note(t, PROCESS_CLAUSES[0], FAIL, plan["error"],
                          "the record allows devices=2 (no max_devices=1), so composing it must "
                          "work; fix what the error names or declare max_devices=1")
                for clause in PROCESS_CLAUSES[1:]:
                    self.note(t, clause, SKIP, "not run: strategy.processes failed")
            elif plan.get("processes", 0) < 2:
                why = plan.get("why", "its one-process checks did not finish")
                for clause in PROCESS_CLAUSES:
                    self.note(t, clause, SKIP, why)
            else:
                self.two_processes(t, plan, root / f"processes-{t.name}")

    def copy_shared(self, strategies: list[Target]) -> None:
        """Names that share a class and launcher get the verdicts of the name whose runs they
        share (once that name's one-process checks are done too)."""
        by_name = {t.name: t for t in strategies}
        for t in strategies:
            first = by_name.get(self.plans.get((t.kind, t.name), {}).get("shares") or "")
            if first is None:
                continue
            for c in clauses_for(t.kind)[1:]:
                v = self.verdicts.get((first.kind, first.name, c.id), Verdict(FAIL, "no verdict"))
                shared = f"shared run with {first.name!r} (same class and launcher)"
                self.note(t, c.id, v.status, f"{shared}: {v.detail}" if v.detail else shared,
                          v.hint, v.where, v.ranks)

    def two_processes(self, t: Target, plan: dict[str, Any], folder: Path) -> None:
        folder.mkdir(parents=True)
        self.progress(f"running strategy {t.name!r} on 2 processes")
        world = int(plan["processes"])
        job = {"mode": "processes", "name": t.name, "accelerator": plan["accelerator"],
               "folder": str(folder)}
        failure = run_job(job, folder, self.timeout, enabled=self.enabled)
        states = read_ranks(folder, world)
        judged: set[str] = set()

        def verdict(clause: str, problems: list[str], hint: str = "", where: str = "",
                    ranks: Sequence[int] = (), passed: str = "") -> None:
            judged.add(clause)
            if problems:
                self.note(t, clause, FAIL, "; ".join(problems), hint, where, ranks)
            else:
                self.note(t, clause, PASS, passed)

        def everyone(phase: str, event: str) -> dict[int, dict[str, Any]] | None:
            """Each rank's report, or None when a rank did not report (judged elsewhere)."""
            found = {r: e for r, s in states.items() if (e := s.reported(phase, event))}
            return found if len(found) == world else None

        trained_by: dict[str, dict[int, dict[str, Any]]] = {}
        for phase, clause in (("trainer", "strategy.trainer_processes"),
                              ("lite", "strategy.lite_processes")):
            trained = everyone(phase, "trained")
            if trained is None:
                continue
            trained_by[phase] = trained
            problems = [f"rank {r} trained {e['steps']} steps, not 2"
                        for r, e in trained.items() if e["steps"] != 2]
            problems += [f"rank {r} reports world size {e['world_size']}, not {world}"
                         for r, e in trained.items() if e["world_size"] != world]
            sampling = sampling_problems(trained)
            problems += sampling
            checkpoints = everyone(phase, "checkpoint") or {}
            problems += [f"rank {r} checkpoint: {e['problem']}" for r, e in checkpoints.items()
                         if e.get("problem")]
            # rank zero's weights are what was saved (ranks may differ between
            # synchronisations, local SGD's do), as for the Trainer's checkpoint
            problems += [f"rank {r}: lite.load gave other weights than lite.save wrote"
                         for r, e in trained.items() if e.get("restored") is False and r == 0]
            hint = ("use the distributed sampler (inherit process_dataloader, or build a "
                    "DistributedSampler from data_parallel_size and data_parallel_rank)"
                    if sampling else "write checkpoints from rank zero only (or collectively) "
                    "and make every rank able to read them" if problems else "")
            if phase == "lite" or checkpoints:
                verdict(clause, problems, hint)
            gathered = everyone(phase, "collectives")
            if gathered is not None:
                found = [p for e in gathered.values() for p in e["problems"]]
                ranks = sorted({p["rank"] for p in found})
                verdict("strategy.collectives", [f"{world} processes, {p['problem']}"
                                                 for p in found],
                        found[0]["hint"] if found else "", found[0]["where"] if found else "",
                        ranks)
        if len(trained_by) == 2:
            pairs = {r: (trained_by["trainer"][r]["weights"], trained_by["lite"][r]["weights"])
                     for r in range(world)}
            # a rank that holds no full state on one side (FSDP gathers to rank zero, a
            # DeepSpeed engine keeps it) is not compared
            differ = [r for r, (a, b) in pairs.items() if a and b and not close(a, b)]
            steps = states[0].defined.get("step", "")
            verdict("strategy.lite_matches_trainer",
                    [f"after 2 steps on the same data the Trainer and Lite weights differ on "
                     f"rank(s) {differ} of {world}"] if differ else [],
                    "the strategy trains differently under Lite: the Trainer sends "
                    "training_step through Strategy.step('training_step', ...) and Lite each "
                    "call of a set-up module through Strategy.step('forward', ...); customise "
                    "both alike (or in optimizer_step/backward, which both call)", steps, differ)
        synced = everyone("lite", "sync")
        if synced is not None:
            claims = [e for e in synced.values() if e.get("claims")]
            if not claims:
                verdict("strategy.no_backward_sync", [], passed="does not override "
                        "no_backward_sync (claims no skipping)")
            else:
                leaky = [r for r, e in synced.items() if e.get("replicas", 2) > 1
                         and e["inside"] and e["inside"] >= e["after"]]
                verdict("strategy.no_backward_sync",
                        [f"rank {r}: {synced[r]['inside']} reduction(s) in a forward and "
                         f"backward inside no_backward_sync(), {synced[r]['after']} outside: "
                         "nothing was skipped" for r in leaky],
                        "no_backward_sync() is overridden (it claims to skip synchronisation) "
                        "but the forward and backward inside it still reduced gradients: it "
                        "must switch synchronisation off for what it encloses — DDP decides in "
                        "the forward, so DistributedDataParallel.no_sync() must be entered "
                        "before the forward", claims[0].get("where", ""), leaky,
                        passed=f"{claims[0]['inside']} reduction(s) inside, "
                        f"{claims[0]['after']} outside")
        silent = [r for r, st in states.items() if st.silent]
        if failure:
            stop = stopped(states, world, failure)
            self.note(t, stop["clause"], FAIL, stop["detail"], stop["hint"], stop["where"],
                      stop["ranks"])
            judged.add(stop["clause"])
            if stop["clause"] != "strategy.processes":
                self.note(t, "strategy.processes", PASS, f"{world} processes started")
                judged.add("strategy.processes")
            for clause in (*PROCESS_CLAUSES, "strategy.collectives",
                           "strategy.lite_matches_trainer"):
                if clause not in judged:
                    self.replace(t, clause, SKIP, f"not reached: the {world}-process run "
                                 f"stopped in {stop['clause']}")
            return
        if silent:
            self.note(t, "strategy.processes", FAIL, f"rank(s) {silent} of {world} never "
                      "reported although the run ended", *hint_for(states, world), silent)
            return
        self.note(t, "strategy.processes", PASS, f"{world} processes")
        for clause in (*PROCESS_CLAUSES[1:], "strategy.collectives",
                       "strategy.lite_matches_trainer"):
            if clause not in judged:
                late = {r: st.phase for r, st in states.items()}
                self.note(t, clause, FAIL, f"the {world}-process run ended without every rank "
                          f"reporting {clause} (last phases: {late})",
                          "a rank left the run early without an error: look for an exit or a "
                          "return on some ranks only", "", sorted(states))


def close(a: list[float], b: list[float], tol: float = 1e-3) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol * (1 + abs(y)) for x, y in zip(a, b))


def sampling_problems(trained: dict[int, dict[str, Any]]) -> list[str]:
    """Ranks of different data-parallel replicas (``Strategy.data_parallel_rank``) must see
    different samples; ranks of one replica (tensor parallelism) the same ones."""
    problems = []
    ranks = sorted(trained)
    for i, a in enumerate(ranks):
        for b in ranks[i + 1:]:
            one, two = trained[a], trained[b]
            same_replica = one.get("data_rank", a) == two.get("data_rank", b)
            if same_replica and one["seen"] != two["seen"]:
                problems.append(f"ranks {a} and {b} share data_parallel_rank "
                                f"{one.get('data_rank')} but trained on different samples")
            elif not same_replica and set(one["seen"]) & set(two["seen"]):
                problems.append(f"ranks {a} and {b} trained on the same samples (no "
                                "distributed sampler)")
    return problems


def run_job(job: dict[str, Any], folder: Path, timeout: float,
            poll: Callable[[], None] | None = None,
            enabled: set[str] | frozenset[str] = frozenset()) -> str | None:
    """Run a worker on ``job`` (calling ``poll()`` twice a second meanwhile); None when it
    exits with 0, else what went wrong."""
    path = folder / "job.json"
    path.write_text(json.dumps(job))
    log = folder / "output.log"
    env = worker_environment(enabled)
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "fulmen.testing.worker", str(path)],
                                   stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder,
                                   start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    code = process.wait(min(0.5, max(0.0, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= deadline:
                        raise
                    if poll is not None:
                        poll()
        except subprocess.TimeoutExpired:
            kill(process)
            return f"timed out after {timeout:g} s and was killed; output: {tail(log)}"
        except BaseException:
            kill(process)
            raise
    if code != 0:
        return f"the check process exited with status {code}: {tail(log)}"
    return None


def kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    process.wait()


def tail(log: Path, lines: int = 6) -> str:
    text = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    useful = [line for line in text if line.strip()][-lines:]
    return " | ".join(useful) if useful else "(no output)"


def worker_environment(enabled: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """This environment without rank variables, one thread per process, and this process's
    import path (plugins found on ``sys.path`` only are found by the workers too); the
    plugins in ``enabled`` are taken off ``FULMEN_DISABLE_PLUGINS`` (and named in
    ``FULMEN_PLUGINS``, for ``FULMEN_PLUGIN_AUTOLOAD=0``)."""
    env = {k: v for k, v in os.environ.items() if k not in RANK_VARIABLES}
    if enabled:
        off = [n.strip() for n in env.get("FULMEN_DISABLE_PLUGINS", "").split(",")
               if n.strip() and n.strip() not in enabled]
        env["FULMEN_DISABLE_PLUGINS"] = ",".join(off)
        named = [n.strip() for n in env.get("FULMEN_PLUGINS", "").split(",") if n.strip()]
        env["FULMEN_PLUGINS"] = ",".join([*named, *sorted(set(enabled) - set(named))])
    env.setdefault("OMP_NUM_THREADS", "1")
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    extra = [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(prefixes)]
    env["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, [env.get("PYTHONPATH")])])
    return env
