"""``MultiprocessingLauncher``: start workers with ``spawn`` or ``fork`` and come back.

Rank 0's result and state (trained weights, metrics, best checkpoint path: whatever the
function's owner returns from ``_spawn_state``) are written to a file the main process reads
after every worker ended, then handed to the owner's ``_load_spawn_state``: the model object the
user passed holds the trained weights afterwards.
"""

from __future__ import annotations

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

from fulmen import ConfigurationError, Launcher
from fulmen_strategies.launchers.lifetime import own_session, stop


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
        children = [(f"{path}.{k}", v) for k, v in obj._modules.items()]
        children += [(f"{path}.{k}", v) for k, v in vars(obj).items() if not k.startswith("_")]
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        children = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    if depth < 8:
        for child_path, child in children:
            found = find_unpicklable(child, child_path, depth + 1, seen)
            if found:
                return found
    name = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"{path}: {name if callable(obj) and not isinstance(obj, type) else type(obj).__name__}"


def check_picklable(strategy_name: str, named: dict[str, Any]) -> None:
    for name, obj in named.items():
        if obj is None:
            continue
        try:
            dumps(obj)
        except Exception as exc:
            culprit = find_unpicklable(obj, name) or name
            raise ConfigurationError(
                f"strategy={strategy_name!r} pickles the {name} to start its worker processes, "
                f"and {culprit} cannot be pickled ({type(exc).__name__}: {exc}). Make it "
                "picklable (define lambdas and local functions at module level) or use "
                "strategy='ddp', which starts processes without pickling anything."
            ) from exc


def _worker(local_rank: int, payload: bytes | tuple[Any, ...], env: dict[str, str],
            result_path: str) -> None:
    own_session()  # torch.multiprocessing already has the worker die with the main process
    function, args, kwargs = pickle.loads(payload) if isinstance(payload, bytes) else payload
    os.environ.update(env)
    os.environ["LOCAL_RANK"] = str(local_rank)
    os.environ["RANK"] = str(int(env["NODE_RANK"]) * int(env["FULMEN_PER_NODE"]) + local_rank)
    try:
        result = function(*args, **kwargs)
    except BaseException:
        # Print it here: at exit gloo may abort the process before torch reports the error.
        sys.stderr.write(f"[rank{os.environ['RANK']}] " + traceback.format_exc())
        sys.stderr.flush()
        raise
    if int(os.environ["RANK"]) == 0:
        owner: Any = getattr(function, "__self__", None)
        state = owner._spawn_state() if hasattr(owner, "_spawn_state") else None
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
            owner: Any = getattr(function, "__self__", None)
            check_picklable(name, {**_named_args(args), "trainer": owner})
        env = strategy.cluster_environment
        per_node = strategy.processes_per_node
        shared = {"MASTER_ADDR": env.main_address, "MASTER_PORT": str(env.main_port),
                  "WORLD_SIZE": str(per_node * strategy.num_nodes),
                  "NODE_RANK": str(env.node_rank()), "FULMEN_PER_NODE": str(per_node)}
        with tempfile.TemporaryDirectory(prefix="fulmen-spawn-") as folder:
            result_path = os.path.join(folder, "rank0.pt")
            payload: bytes | tuple[Any, ...] = (function, args, kwargs)
            if self.start_method != "fork":
                payload = dumps(payload)
            context = tmp.start_processes(_worker, args=(payload, shared, result_path),
                                          nprocs=per_node, start_method=self.start_method,
                                          join=False)
            try:
                while not context.join():
                    pass
            except BaseException:  # a worker failed (the others are stopped) or Ctrl-C here
                stop(context.processes)
                raise
            with open(result_path, "rb") as handle:
                package = torch.load(handle, weights_only=False)  # written by our own worker
        owner = getattr(function, "__self__", None)
        if package["state"] is not None and hasattr(owner, "_load_spawn_state"):
            owner._load_spawn_state(package["state"])
        return package["result"]


def _named_args(args: tuple[Any, ...]) -> dict[str, Any]:
    named: dict[str, Any] = {}
    for value in args:
        kind = type(value).__mro__
        label = ("model" if any(c.__name__ == "Module" and c.__module__ == "fulmen.module"
                                for c in kind) else
                 "datamodule" if any(c.__name__ == "DataModule" for c in kind) else None)
        if label:
            named[label] = value
        elif isinstance(value, dict):
            named.update({f"{k} dataloaders": v for k, v in value.items() if v is not None})
    return named


