"""``ScriptLauncher``: run the user's command again once per extra local process (``ddp``).

Each child gets ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``NODE_RANK``, ``LOCAL_RANK``
and ``RANK`` and executes the script from the top, like ``torchrun`` would. Works with
``python script.py`` and ``python -m package.module``.

Children run in their own session and die with this process (see ``lifetime``): a terminal's
Ctrl-C reaches only this process, which stops them.

Failure rules: if a child exits with an error, the others are stopped and this process exits
with status 1 (the child's traceback is already on the terminal); if this process raises, the
children are stopped.

One exception: a child that finished its script (no uncaught exception: it leaves a mark in a
folder the launcher gives it, as its last exit handler) and is then killed by ``SIGABRT`` has
done its work. torch's C++ teardown sometimes aborts a process that way after Python has
finished ("terminate called without an active exception"); the launcher says so on stderr and
counts the child as successful instead of failing the job.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fulmen import ConfigurationError, Launcher
from fulmen_strategies.launchers.lifetime import die_with_parent, stop
from fulmen_strategies.launchers.threads import apply_in_process, thread_settings

LAUNCHED = "FULMEN_LAUNCHED"  # set in the processes a ScriptLauncher started (and in its own)
EXIT_MARKS = "FULMEN_EXIT_MARKS"  # the folder where children mark that they finished


@functools.cache
def mark_finish_at_exit() -> None:
    """In a child a ScriptLauncher started: register the exit handler that marks its script as
    finished (no uncaught exception) in the launcher's folder; elsewhere nothing. Once per
    process; called before the process group's own exit handler is registered, so the mark is
    the last thing fulmen does in the process."""
    folder, local_rank = os.environ.get(EXIT_MARKS), os.environ.get("LOCAL_RANK", "0")
    if os.environ.get(LAUNCHED) != "1" or not folder or local_rank == "0":
        return

    def mark() -> None:
        if getattr(sys, "last_value", None) is None:
            Path(folder, f"rank_{local_rank}").touch()

    atexit.register(mark)


def command_line() -> list[str]:
    """How this process was started, to start it again."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        module = spec.name[: -len(".__main__")] if spec.name.endswith(".__main__") else spec.name
        return [sys.executable, "-m", module, *sys.argv[1:]]
    script = os.path.abspath(sys.argv[0])
    return [sys.executable, script, *sys.argv[1:]]


class ScriptLauncher(Launcher):
    """Starts local ranks 1..n-1 as new processes; this process is local rank 0."""

    def __init__(self, strategy: Any) -> None:
        super().__init__(strategy)
        self.children: list[subprocess.Popen[bytes]] = []
        self._stopping = False
        self._marks = ""  # the folder children mark a finished script in (see the module doc)
        self._forgiven: set[int] = set()

    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        strategy = self.strategy
        env = strategy.cluster_environment
        if os.environ.get(LAUNCHED) == "1":  # a launched child, or a second run in the parent
            _check_launched_rank(env)
            return function(*args, **kwargs)
        per_node = strategy.processes_per_node
        node_rank = env.node_rank()
        threads = thread_settings(per_node, strategy.name)
        self._marks = tempfile.mkdtemp(prefix="fulmen-exit-")
        shared = {"MASTER_ADDR": env.main_address, "MASTER_PORT": str(env.main_port),
                  "WORLD_SIZE": str(per_node * strategy.num_nodes), "NODE_RANK": str(node_rank),
                  LAUNCHED: "1", EXIT_MARKS: self._marks, **threads}
        os.environ.update(shared)
        apply_in_process(threads)
        command = command_line()
        on_linux = sys.platform.startswith("linux")
        for local_rank in range(1, per_node):
            child_env = {**os.environ, **shared, "LOCAL_RANK": str(local_rank),
                         "RANK": str(node_rank * per_node + local_rank)}
            self.children.append(subprocess.Popen(
                command, env=child_env, start_new_session=True,
                preexec_fn=functools.partial(die_with_parent, os.getpid()) if on_linux else None))
        # From now on this process is local rank 0 of a launched job: a second Trainer in the
        # same script must not launch again (its children run that Trainer themselves).
        os.environ.update({"LOCAL_RANK": "0", "RANK": str(node_rank * per_node)})
        atexit.register(self._wait_at_exit)
        threading.Thread(target=self._watch, name="fulmen-launcher-watch", daemon=True).start()
        try:
            return function(*args, **kwargs)
        except BaseException:
            # This rank's error is often a child's death seen from a collective ("connection
            # closed by peer"): give the children a moment to be reaped, so the report names
            # the child that died first.
            deadline = time.monotonic() + 2.0
            for child in self.children:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=max(0.0, deadline - time.monotonic()))
            for rank, child in enumerate(self.children, start=1):
                code = child.poll()
                if code not in (None, 0):
                    sys.stderr.write(f"fulmen: local rank {rank} exited with status {code} (its "
                                     "error is above); stopping the job.\n")
            self._stop_children()
            raise

    def _status(self, rank: int, child: subprocess.Popen[bytes]) -> int | None:
        """The child's exit status (None while it runs), 0 for one that finished its script
        and was then aborted by torch's teardown (said on stderr, once)."""
        code = child.poll()
        if code == -signal.SIGABRT and Path(self._marks, f"rank_{rank}").exists():
            if rank not in self._forgiven:
                self._forgiven.add(rank)
                sys.stderr.write(
                    f"fulmen: local rank {rank} finished its script, then was aborted in torch's "
                    "interpreter teardown (SIGABRT, 'terminate called without an active "
                    "exception'); its work is done, so the job goes on.\n")
                sys.stderr.flush()
            return 0
        return code

    def _watch(self) -> None:
        while not self._stopping:
            for rank, child in enumerate(self.children, start=1):
                code = self._status(rank, child)
                if code not in (None, 0) and not self._stopping:
                    sys.stderr.write(f"\nfulmen: local rank {rank} exited with status {code} "
                                     "(its error is above); stopping the other processes.\n")
                    sys.stderr.flush()
                    self._stop_children()
                    os._exit(1)
            if all(self._status(rank, child) == 0
                   for rank, child in enumerate(self.children, start=1)):
                return
            time.sleep(0.2)

    def _stop_children(self) -> None:
        self._stopping = True
        stop(self.children)
        if self._marks:
            shutil.rmtree(self._marks, ignore_errors=True)

    def _wait_at_exit(self) -> None:
        """At interpreter exit: the children finish the script too; fail if one failed."""
        if self._stopping:  # already stopped because of an error
            return
        codes = []
        for rank, child in enumerate(self.children, start=1):
            try:
                child.wait()
            except KeyboardInterrupt:
                self._stop_children()
                raise
            codes.append(self._status(rank, child))
        self._stopping = True
        shutil.rmtree(self._marks, ignore_errors=True)
        failed = [c for c in codes if c != 0]
        if failed:
            sys.stderr.write(f"fulmen: a child process exited with status {failed[0]}\n")
            sys.stderr.flush()
            os._exit(1)


def _check_launched_rank(env: Any) -> None:
    """A custom environment must report the local rank fulmen gave this process."""
    given = os.environ.get("LOCAL_RANK")
    if given is not None and given.isdigit() and env.local_rank() != int(given):
        raise ConfigurationError(
            f"this process was launched by fulmen as local rank {given} (LOCAL_RANK={given}), "
            f"but the {env.name!r} cluster environment's local_rank() returns "
            f"{env.local_rank()}; a ClusterEnvironment whose creates_processes_externally is "
            "False must read LOCAL_RANK (e.g. int(os.environ.get('LOCAL_RANK', 0)))")
