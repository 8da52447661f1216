"""Safe references for hyper-parameters that are objects: an ``nn.Module`` or a
``functools.partial`` is written to checkpoints and ``hparams.yaml`` as an import path and
constructor arguments (jsonargparse's ``class_path``/``init_args``), never pickled, so a
checkpoint loads with ``weights_only=True``; ``load_from_checkpoint`` re-creates the object.

Re-creating imports the recorded class and calls it: load checkpoints you trust, or pass the
object yourself (``load_from_checkpoint(path, backbone=MyBackbone())``) and nothing is
re-created for that key.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
import weakref
from typing import Any

CLASS_PATH, INIT_ARGS, PARTIAL = "class_path", "init_args", "partial"
PLAIN = (str, int, float, bool, type(None))


class NotReferable(ValueError):
    """The object has no safe reference (its constructor arguments cannot be read back)."""


def encode(value: Any) -> Any:
    """``value`` with every module and partial replaced by its reference; plain data (and
    tensors, which ``weights_only`` loads) unchanged. Raises ``NotReferable``."""
    import torch

    if isinstance(value, (*PLAIN, torch.Tensor, torch.dtype, torch.device)):
        return value
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(encode(v) for v in value) if type(value) in (list, tuple) \
            else [encode(v) for v in value]
    if isinstance(value, functools.partial):
        return {CLASS_PATH: _path_of(value.func), PARTIAL: True,
                INIT_ARGS: {**({"*args": encode(list(value.args))} if value.args else {}),
                            **encode(dict(value.keywords))}}
    if isinstance(value, torch.nn.Module):
        if value not in _MODULE_REFS:  # checked once per object, not at every checkpoint
            _MODULE_REFS[value] = {CLASS_PATH: _path_of(type(value)),
                                   INIT_ARGS: encode(_init_args(value))}
        return _MODULE_REFS[value]
    raise NotReferable(f"a {type(value).__module__}.{type(value).__qualname__} is neither plain "
                       "data nor an nn.Module or functools.partial")


def decode(value: Any) -> Any:
    """Re-create what ``encode`` recorded."""
    if isinstance(value, dict):
        if set(value) in ({CLASS_PATH, INIT_ARGS}, {CLASS_PATH, INIT_ARGS, PARTIAL}):
            return _create(value)
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(decode(v) for v in value)
    return value


def encode_hparams(hparams: dict[str, Any], owner: str) -> dict[str, Any]:
    """Each hyper-parameter encoded; one that cannot be is kept as it is, with a warning that
    says how loading it will need ``weights_only=False`` and how to avoid that."""
    out: dict[str, Any] = {}
    for key, value in hparams.items():
        try:
            out[key] = encode(value)
        except NotReferable as exc:
            warnings.warn(f"{owner} hyper-parameter {key!r}: {exc}, so it is pickled into the "
                          "checkpoint and load_from_checkpoint will need weights_only=False. "
                          f"Use save_hyperparameters(ignore=[{key!r}]) and pass it to "
                          f"load_from_checkpoint(path, {key}=...), or make it plain data",
                          stacklevel=3)
            out[key] = value
    return out


def _path_of(target: Any) -> str:
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not module or "<locals>" in qualname or module == "__main__":
        where = "a function or class defined inside a function" if "<locals>" in qualname \
            else "__main__ (not importable from another process)"
        raise NotReferable(f"{target!r} is defined in {where}")
    return f"{module}.{qualname}"


def _init_args(module: Any) -> dict[str, Any]:
    """The constructor arguments of ``module``: its own recorded hyper-parameters (a fulmen
    Module), else the attributes named like the constructor's parameters — checked by
    re-creating it and comparing the ``repr`` and parameter shapes."""
    from fulmen.hparams import HasHyperparameters

    if isinstance(module, HasHyperparameters) and module.hparams:
        return dict(module.hparams)
    cls = type(module)
    args: dict[str, Any] = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        value = module.__dict__.get(name, _MISSING)
        if value is _MISSING:
            value = getattr(module, name, _MISSING) if name not in ("training",) else _MISSING
        if value is not _MISSING and isinstance(value, (*PLAIN, list, tuple)):
            args[name] = value
        elif param.default is param.empty:
            raise NotReferable(f"{cls.__qualname__}'s argument {name!r} cannot be read back "
                               "from the object")
    import torch

    try:
        with torch.device("meta"):  # the check allocates no memory
            again = cls(**args)
    except Exception:
        try:  # a module whose __init__ computes on its tensors
            again = cls(**args)
        except Exception as exc:  # the guess does not construct
            raise NotReferable(f"{cls.__qualname__}(**{args}) failed: {exc}") from None
    same = repr(again) == repr(module) and [p.shape for p in again.parameters()] == [
        p.shape for p in module.parameters()]
    if not same:
        raise NotReferable(f"{cls.__qualname__}(**{args}) does not re-create it "
                           f"({again!r} != {module!r})")
    return args


_MISSING = object()
_MODULE_REFS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _create(ref: dict[str, Any]) -> Any:
    import torch

    from fulmen.errors import ConfigurationError

    path = ref[CLASS_PATH]
    module_name, _, name = str(path).rpartition(".")
    target: Any = None
    for split in range(len(path.split(".")) - 1, 0, -1):  # nested qualnames: a.b.Outer.Inner
        parts = path.split(".")
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            target = getattr(target, attr, None)
        break
    if target is None:
        raise ConfigurationError(f"hyper-parameter reference {path!r}: cannot import "
                                 f"{name!r} from {module_name!r}; install the package that "
                                 "defines it, or pass the object to load_from_checkpoint")
    args = decode(dict(ref[INIT_ARGS]))
    positional = args.pop("*args", [])
    if ref.get(PARTIAL):
        if not callable(target):
            raise ConfigurationError(f"hyper-parameter reference {path!r} is not callable")
        return functools.partial(target, *positional, **args)
    if not (isinstance(target, type) and issubclass(target, torch.nn.Module)):
        raise ConfigurationError(f"hyper-parameter reference {path!r} is not a torch.nn.Module "
                                 "class; only modules (and partials) are re-created")
    return target(*positional, **args)
