"""``save_hyperparameters``: record the arguments a module or datamodule was built with; and
the way back (Lightning's ``lightning.pytorch.core.saving``): the constructor arguments from a
checkpoint's hyper-parameters, and the ``hparams.yaml``/``tags.csv`` files ``load_from_checkpoint(
hparams_file=...)`` reads."""

from __future__ import annotations

import ast
import csv
import inspect
import os
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: Keys of checkpoints older than Lightning 1.0 that held the hyper-parameters (oldest first)
CHECKPOINT_PAST_HPARAMS_KEYS = ("hparams", "module_arguments")


class AttributeDict(dict):
    """A dict whose keys are also attributes: ``hparams.lr`` is ``hparams["lr"]``."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError as exc:
            raise AttributeError(f"no hyper-parameter {key!r}; saved: {sorted(self)}") from exc

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class HasHyperparameters:
    """What records its constructor arguments in ``hparams`` (``fulmen.Module`` and
    ``fulmen.DataModule`` through ``save_hyperparameters``): a checkpoint stores a reference
    to such an object as its class and ``hparams`` (:mod:`fulmen.references`)."""

    #: False after ``save_hyperparameters(logger=False)``: the Trainer keeps them from the loggers
    _log_hyperparams: bool = True

    @property
    def hparams(self) -> AttributeDict:
        """The recorded constructor arguments (empty when none were saved)."""
        raise NotImplementedError


def init_arguments(frame: types.FrameType, owner: object) -> dict[str, Any]:
    """The arguments of the ``__init__`` running in ``frame`` (and its callers for the same
    object, so subclasses contribute theirs): named ones and what ``**kwargs`` holds; not
    ``*args``, which has no names to pass back (as Lightning)."""
    collected: dict[str, Any] = {}
    current: types.FrameType | None = frame
    while current is not None:
        if current.f_code.co_name != "__init__" or current.f_locals.get("self") is not owner:
            break
        info = inspect.getargvalues(current)
        values = {name: info.locals[name] for name in info.args[1:]
                  if name not in ("frame", "frame_args")}
        if info.keywords:  # **kwargs count as arguments; *args do not (Lightning's rule)
            values.update(info.locals[info.keywords])
        collected = {**values, **collected}
        current = current.f_back
    return collected


def select(arguments: dict[str, Any], names: Iterable[str],
           ignore: Iterable[str]) -> dict[str, Any]:
    names, ignore = list(names), set(ignore)
    missing = [n for n in names if n not in arguments]
    if missing:
        from fulmen.errors import ConfigurationError

        raise ConfigurationError(f"save_hyperparameters{tuple(names)}: {missing} are not "
                                 f"arguments of __init__; its arguments are {sorted(arguments)}")
    chosen = {n: arguments[n] for n in names} if names else dict(arguments)
    return {k: v for k, v in chosen.items() if k not in ignore}


def container_name(arguments: dict[str, Any], container: Any,
                   ignore: Iterable[str] = ()) -> str | None:
    """The ``__init__`` argument that holds ``container`` (the dict/Namespace given to
    ``save_hyperparameters``): the one that is it, else one equal to it (Lightning's rule)."""
    candidates = {k: v for k, v in arguments.items() if k not in set(ignore)}
    found = next((k for k, v in candidates.items() if v is container), None)
    if found is None:
        for k, v in candidates.items():
            try:
                if v == container:
                    return k
            except (RuntimeError, ValueError):  # e.g. a tensor, whose == is no bool
                continue
    return found


def as_mapping(value: Any) -> dict[str, Any]:
    """The hyper-parameters in one ``save_hyperparameters`` argument: a dict (or
    ``AttributeDict``) or an ``argparse.Namespace``."""
    import argparse

    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, argparse.Namespace):
        return dict(vars(value))
    from fulmen.errors import ConfigurationError

    raise ConfigurationError(f"save_hyperparameters({type(value).__name__}): give argument "
                             "names (strings), one dict or one argparse.Namespace")


def init_parameters(cls: type) -> tuple[list[str], bool]:
    """The names ``cls.__init__`` takes by keyword (not ``self``, ``*args``, ``**kwargs``), and
    whether it takes ``**kwargs``."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
    named = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return named, any(p.kind is p.VAR_KEYWORD for p in params)


def constructor_kwargs(cls: type, checkpoint: Mapping[str, Any], new: dict[str, Any],
                       past_keys: Iterable[str] = (),
                       decode: Callable[[Any], Any] = lambda value: value) -> dict[str, Any]:
    """The keyword arguments that rebuild ``cls`` from a checkpoint (Lightning's
    ``_load_state``): the saved hyper-parameters (``cls.CHECKPOINT_HYPER_PARAMS_KEY``, after
    ``past_keys``), converted to ``CHECKPOINT_HYPER_PARAMS_TYPE``, wrapped as the one argument
    ``CHECKPOINT_HYPER_PARAMS_NAME`` names when ``__init__`` has it (a dict/Namespace saved
    with ``save_hyperparameters(config)``), then ``new`` over them; only the arguments
    ``__init__`` takes, unless it takes ``**kwargs``. Saved references (``class_path``/
    ``init_args``) are re-created by ``decode`` (:func:`fulmen.references.decode`), unless
    ``new`` gives them."""
    named, takes_kwargs = init_parameters(cls)
    key = cls.CHECKPOINT_HYPER_PARAMS_KEY  # type: ignore[attr-defined]
    loaded: dict[str, Any] = {}
    if key in checkpoint:
        for past in past_keys:
            loaded.update(checkpoint.get(past) or {})
        loaded.update(checkpoint.get(key) or {})
        # LightningCLI's instantiator: the references are re-created instead (decode)
        loaded.pop("_instantiator", None)
        loaded = {k: v if k in new else decode(v) for k, v in loaded.items()}
        kind = checkpoint.get(cls.CHECKPOINT_HYPER_PARAMS_TYPE)  # type: ignore[attr-defined]
        if kind:  # a str in old checkpoints: an AttributeDict
            loaded = AttributeDict(loaded) if isinstance(kind, str) else kind(loaded)
        name = checkpoint.get(cls.CHECKPOINT_HYPER_PARAMS_NAME)  # type: ignore[attr-defined]
        if name and name in named:  # (an AttributeDict where Lightning gives a dict)
            loaded = {name: loaded if kind else AttributeDict(loaded)}
    kwargs = {**loaded, **new}
    kwargs.pop("_instantiator", None)
    if not takes_kwargs:
        kwargs = {k: v for k, v in kwargs.items() if k in named}
    return kwargs


def hparams_from_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``load_from_checkpoint(hparams_file=...)``: the hyper-parameters in a ``.yaml``/``.yml``
    (:func:`load_hparams_from_yaml`) or ``.csv`` (:func:`load_hparams_from_tags_csv`) file."""
    extension = str(path).rsplit(".", 1)[-1].lower()
    if extension == "csv":
        return load_hparams_from_tags_csv(path)
    if extension in ("yml", "yaml"):
        return load_hparams_from_yaml(path)
    raise ValueError(f"hparams_file={str(path)!r}: .csv, .yml or .yaml is required for "
                     "`hparams_file`")


def load_hparams_from_yaml(config_yaml: str | os.PathLike[str]) -> dict[str, Any]:
    """The hyper-parameters in a YAML file (``hparams.yaml`` as the loggers write it); a
    missing file warns and gives ``{}`` (Lightning's)."""
    import yaml

    from fulmen import storage

    if not storage.exists(str(config_yaml)):
        warnings.warn(f"Missing Tags: {config_yaml}.", RuntimeWarning, stacklevel=2)
        return {}
    with storage.open_file(str(config_yaml), "r") as handle:
        return yaml.full_load(handle) or {}


def load_hparams_from_tags_csv(tags_csv: str | os.PathLike[str]) -> dict[str, Any]:
    """The hyper-parameters in a ``key,value`` CSV file (a header row, then one row each; the
    values read as Python literals where they are); a missing file warns and gives ``{}``."""
    from fulmen import storage

    if not storage.exists(str(tags_csv)):
        warnings.warn(f"Missing Tags: {tags_csv}.", RuntimeWarning, stacklevel=2)
        return {}
    with storage.open_file(str(tags_csv), "r", newline="") as handle:
        return {row[0]: convert(row[1]) for row in list(csv.reader(handle))[1:]}


def save_hparams_to_tags_csv(tags_csv: str | os.PathLike[str],
                             hparams: Mapping[str, Any] | Any) -> None:
    """Write ``hparams`` (a dict or ``argparse.Namespace``) as a ``key,value`` CSV file, which
    :func:`load_hparams_from_tags_csv` reads back."""
    from fulmen import storage

    folder = os.path.dirname(str(tags_csv))
    if folder and not storage.exists(folder):
        raise FileNotFoundError(f"Missing folder: {folder}.")
    with storage.open_file(str(tags_csv), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["key", "value"])
        writer.writerow({"key": "key", "value": "value"})
        for k, v in as_mapping(hparams).items():
            writer.writerow({"key": k, "value": v})


def convert(val: str) -> Any:
    """A CSV value as the Python literal it spells, else the string."""
    try:
        return ast.literal_eval(val)
    except (ValueError, SyntaxError):
        return val
