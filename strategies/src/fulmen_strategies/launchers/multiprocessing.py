"""``MultiprocessingLauncher``: start workers with ``spawn`` or ``fork`` and come back.

Rank 0's result and state (trained weights, metrics, best checkpoint path: whatever the
function's owner, a ``fulmen.api.LaunchOwner``, returns from ``worker_state()``) are written to
a file the main process reads after every worker ended, then handed to the owner's
``load_worker_state``: the model object the user passed holds the trained weights afterwards.
"""

from __future__ import annotations

import contextlib
import copyreg
import io
import multiprocessing
import os
import pickle
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as tmp
from torch.multiprocessing.spawn import ProcessException

from fulmen import ConfigurationError, FulmenError, Launcher
from fulmen.api.launcher import launch_owner
from fulmen_strategies.launchers.lifetime import own_session, stop
from fulmen_strategies.launchers.threads import apply_in_process, thread_settings


def _rebuild_generator(device: str, state: torch.Tensor) -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.set_state(state)
    return generator


def _reduce_generator(generator: torch.Generator) -> Any:
    return _rebuild_generator, (str(generator.device), generator.get_state())


class _Pickler(pickle.Pickler):
    """Plain pickling (not torch's ForkingPickler): tensors are copied, never put in shared
    memory — shared parameters would make every rank apply every update. A torch.Generator is
    sent as its state (pickling one into a spawned worker crashes with torch 2.13)."""

    dispatch_table = {**copyreg.dispatch_table, torch.Generator: _reduce_generator}


def dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def find_unpicklable(obj: Any, path: str, depth: int = 0, seen: set[int] | None = None
                     ) -> str | None:
    """The attribute path of the first thing in ``obj`` that cannot be pickled."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return None
    seen.add(id(obj))
    try:
        dumps(obj)
        return None
    except Exception:
        pass
    children: list[tuple[str, Any]] = []
    if isinstance(obj, dict):
        children = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, list | tuple):
        children = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    elif isinstance(obj, torch.nn.Module):
        children = [(f"{path}.{k}", v) for k, v in obj.named_children()]
        children += [(f"{path}.{k}", v) for k, v in vars(obj).items() if not k.startswith("_")]
    elif not isinstance(obj, type):
        with contextlib.suppress(TypeError):  # objects without a __dict__ have no children
            children = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    if depth < 8:
        for child_path, child in children:
            found = find_unpicklable(child, child_path, depth + 1, seen)
            if found:
                return found
    name = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"{path}: {name if callable(obj) and not isinstance(obj, type) else type(obj).__name__}"


def pickle_payload(strategy_name: str, payload: tuple[Any, ...], named: dict[str, Any]) -> bytes:
    """``payload`` pickled once; when that fails, the error names the first thing in ``named``
    (the model, the data...) that cannot be pickled."""
    try:
        return dumps(payload)
    except Exception as exc:
        found = ((name, find_unpicklable(obj, name)) for name, obj in named.items()
                 if obj is not None)
        name, culprit = next(((n, path) for n, path in found if path), ("work", None))
        raise ConfigurationError(
            f"strategy={strategy_name!r} pickles the {name} to start its worker processes, and "
            f"{culprit or 'it'} cannot be pickled ({type(exc).__name__}: {exc}). Make it "
            "picklable (define lambdas and local functions at module level) or use "
            "strategy='ddp', which starts processes without pickling anything."
        ) from exc


def _worker(local_rank: int, payload: str | tuple[Any, ...], env: dict[str, str],
            result_path: str) -> None:
    own_session()  # torch.multiprocessing already has the worker die with the main process
    if isinstance(payload, str):  # spawn: the path of the work, pickled once by the launcher
        with open(payload, "rb") as handle:
            work: tuple[Any, ...] = pickle.load(handle)
    else:
        work = payload
    function, args, kwargs = work
    os.environ.update(env)
    apply_in_process(env)
    os.environ["LOCAL_RANK"] = str(local_rank)
    os.environ["RANK"] = str(int(env["NODE_RANK"]) * int(env["FULMEN_PER_NODE"]) + local_rank)
    try:
        result = function(*args, **kwargs)
    except SystemExit as exc:  # a deliberate exit (after a preemption checkpoint): its status
        code = exc.code if isinstance(exc.code, int) else 1
        Path(f"{result_path}.exit-rank{os.environ['RANK']}").write_text(str(code))
        raise
    except BaseException:
        # Print it here: at exit gloo may abort the process before torch reports the error.
        sys.stderr.write(f"[rank{os.environ['RANK']}] " + traceback.format_exc())
        sys.stderr.flush()
        raise
    if int(os.environ["RANK"]) == 0:
        owner = launch_owner(function)
        state = owner.worker_state() if owner is not None else None
        buffer = io.BytesIO()
        torch.save({"result": result, "state": state}, buffer)
        tmp_path = result_path + ".tmp"
        Path(tmp_path).write_bytes(buffer.getvalue())
        os.replace(tmp_path, result_path)


class MultiprocessingLauncher(Launcher):
    """``spawn`` (pickles the work; safe everywhere) or ``fork`` (no pickling; CPU or before
    CUDA is initialised, and where the platform has fork)."""

    def __init__(self, strategy: Any, start_method: str = "spawn") -> None:
        super().__init__(strategy)
        if start_method not in ("spawn", "fork"):
            raise ConfigurationError(f"MultiprocessingLauncher(start_method={start_method!r}): "
                                     "use 'spawn' or 'fork'")
        self.start_method = start_method

    @property
    def is_interactive_compatible(self) -> bool:
        return self.start_method == "fork"

    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        strategy = self.strategy
        name = strategy.name
        if self.start_method == "fork":
            if "fork" not in multiprocessing.get_all_start_methods():
                raise ConfigurationError(f"strategy={name!r} needs the 'fork' start method, "
                                         "which this platform lacks; use strategy='ddp_spawn'")
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                raise ConfigurationError(
                    f"strategy={name!r} cannot fork after CUDA was initialised in this process "
                    "(the children would crash). Restart the kernel and avoid touching CUDA "
                    "before fit, or use strategy='ddp_spawn'")
        else:
            _refuse_unguarded_main(name)
        env = strategy.cluster_environment
        per_node = strategy.processes_per_node
        shared = {"MASTER_ADDR": env.main_address, "MASTER_PORT": str(env.main_port),
                  "WORLD_SIZE": str(per_node * strategy.num_nodes),
                  "NODE_RANK": str(env.node_rank()), "FULMEN_PER_NODE": str(per_node),
                  **thread_settings(per_node, name)}
        with tempfile.TemporaryDirectory(prefix="fulmen-spawn-") as folder:
            result_path = os.path.join(folder, "rank0.pt")
            work = (function, args, kwargs)
            payload: str | tuple[Any, ...] = work
            if self.start_method != "fork":
                # Pickled once, into a file each worker reads: sent through the start pipe, a
                # payload larger than the pipe's buffer would block the launcher until the first
                # worker has imported the main module, starting the workers one after another.
                owner = launch_owner(function)
                label = type(owner).__name__.lower() if owner is not None else "function"
                data = pickle_payload(name, work, {
                    **_named_args(args), label: owner if owner is not None else function})
                payload = os.path.join(folder, "work.pkl")
                Path(payload).write_bytes(data)
            context = tmp.start_processes(_worker, args=(payload, shared, result_path),
                                          nprocs=per_node, start_method=self.start_method,
                                          join=False)
            try:
                while not context.join():
                    pass
            except ProcessException as exc:  # a worker failed; the others are stopped
                stop(context.processes)
                exits = sorted(Path(folder).glob("rank0.pt.exit-rank*"))
                if exits:  # a worker left with sys.exit(status): so does the launching process
                    raise SystemExit(int(exits[0].read_text())) from None
                raise FulmenError(f"strategy={name!r}: worker process {exc.error_index} failed; "
                                  "its error is printed above") from None
            except BaseException:  # Ctrl-C here
                stop(context.processes)
                raise
            with open(result_path, "rb") as handle:
                package = torch.load(handle, weights_only=False)  # written by our own worker
        owner = launch_owner(function)
        if package["state"] is not None and owner is not None:
            owner.load_worker_state(package["state"])
        return package["result"]


def _refuse_unguarded_main(strategy_name: str) -> None:
    """In a spawned worker that is still importing the user's script (which has no
    ``if __name__ == "__main__":`` guard), say so in a few lines instead of Python's
    bootstrapping traceback, and end the worker."""
    import inspect

    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__") != "__mp_main__":
        frame = frame.f_back
    if frame is None:
        return
    script = frame.f_globals.get("__file__", "your script")
    sys.stderr.write(
        f"fulmen: strategy={strategy_name!r} starts its workers by importing {script} again, and "
        "its top level started training again.\nPut the code that trains under a main guard:\n\n"
        "    if __name__ == \"__main__\":\n        trainer.fit(model, data)\n\n"
        "or use strategy='ddp', which runs the script once per process instead.\n")
    sys.stderr.flush()
    os._exit(1)


def _named_args(args: tuple[Any, ...]) -> dict[str, Any]:
    from fulmen import DataModule

    named: dict[str, Any] = {}
    for value in args:
        label = ("model" if isinstance(value, torch.nn.Module) else
                 "datamodule" if isinstance(value, DataModule) else None)
        if label:
            named[label] = value
        elif isinstance(value, dict):
            named.update({f"{k} dataloaders": v for k, v in value.items() if v is not None})
    return named


