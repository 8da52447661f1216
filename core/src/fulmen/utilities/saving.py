"""Lightning's hyper-parameter files (``lightning.pytorch.core.saving``): ``hparams.yaml`` and
the old ``tags.csv``, at a local path or a URL, with OmegaConf configs kept as such when
omegaconf is installed."""

from __future__ import annotations

import ast
import contextlib
import csv
import logging
import os
from argparse import Namespace
from copy import deepcopy
from enum import Enum
from pathlib import Path
from typing import Any
from warnings import warn

from fulmen.utilities.apply_func import apply_to_collection
from fulmen.utilities.cloud_io import get_filesystem
from fulmen.utilities.rank_zero import rank_zero_warn

__all__ = ["convert", "load_hparams_from_tags_csv", "load_hparams_from_yaml",
           "save_hparams_to_tags_csv", "save_hparams_to_yaml", "update_hparams"]

log = logging.getLogger(__name__)


def _omegaconf_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("omegaconf") is not None


def update_hparams(hparams: dict[str, Any], updates: dict[str, Any]) -> None:
    """Merge ``updates`` into ``hparams`` in place, recursing into nested dicts.

    >>> hparams = {'c': 4}
    >>> update_hparams(hparams, {'a': {'b': 2}, 'c': 1})
    >>> hparams['a']['b'], hparams['c']
    (2, 1)
    """
    for key, value in updates.items():
        if key in hparams and isinstance(value, dict):
            update_hparams(hparams[key], value)
        else:
            hparams[key] = value


def convert(val: str) -> int | float | bool | str:
    """A Python literal in ``val`` (``"3"`` -> 3, ``"True"`` -> True), else ``val`` itself."""
    try:
        value: int | float | bool | str = ast.literal_eval(val)
        return value
    except (ValueError, SyntaxError) as err:
        log.debug(err)
        return val


def _check_folder(fs: Any, path: str | Path) -> None:
    folder = os.path.dirname(str(path))
    if folder and not fs.isdir(folder):
        raise RuntimeError(f"Missing folder: {folder}.")


def load_hparams_from_tags_csv(tags_csv: str | Path) -> dict[str, Any]:
    """The ``key,value`` rows of a ``tags.csv`` (values as Python literals where they are);
    ``{}`` with a warning when the file is missing."""
    fs = get_filesystem(tags_csv)
    if not fs.exists(str(tags_csv)):
        rank_zero_warn(f"Missing Tags: {tags_csv}.", category=RuntimeWarning)
        return {}
    with fs.open(str(tags_csv), "r", newline="") as handle:
        return {row[0]: convert(row[1]) for row in list(csv.reader(handle, delimiter=","))[1:]}


def save_hparams_to_tags_csv(tags_csv: str | Path, hparams: dict[str, Any] | Namespace) -> None:
    """Write ``hparams`` as ``key,value`` rows (the folder must exist)."""
    fs = get_filesystem(tags_csv)
    _check_folder(fs, tags_csv)
    if isinstance(hparams, Namespace):
        hparams = vars(hparams)
    with fs.open(str(tags_csv), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["key", "value"])
        writer.writerow({"key": "key", "value": "value"})
        for key, value in hparams.items():
            writer.writerow({"key": key, "value": value})


def load_hparams_from_yaml(config_yaml: str | Path, use_omegaconf: bool = True) -> Any:
    """The hyper-parameters in a YAML file (an OmegaConf ``DictConfig`` when omegaconf is
    installed and ``use_omegaconf``); ``{}`` with a warning when the file is missing."""
    import yaml

    fs = get_filesystem(config_yaml)
    if not fs.exists(str(config_yaml)):
        rank_zero_warn(f"Missing Tags: {config_yaml}.", category=RuntimeWarning)
        return {}
    with fs.open(str(config_yaml), "r") as handle:
        hparams = yaml.full_load(handle)
    if use_omegaconf and _omegaconf_available():
        from omegaconf import OmegaConf
        from omegaconf.errors import UnsupportedValueType, ValidationError

        with contextlib.suppress(UnsupportedValueType, ValidationError):
            return OmegaConf.create(hparams)
    return hparams


def save_hparams_to_yaml(config_yaml: str | Path, hparams: dict[str, Any] | Namespace,
                         use_omegaconf: bool = True) -> None:
    """Write ``hparams`` to a YAML file (the folder must exist); values YAML cannot hold are
    skipped with a warning. OmegaConf configs are resolved and saved by OmegaConf when it is
    installed and ``use_omegaconf``."""
    import yaml

    fs = get_filesystem(config_yaml)
    _check_folder(fs, config_yaml)
    if isinstance(hparams, Namespace):
        hparams = vars(hparams)
    elif isinstance(hparams, dict):
        hparams = dict(hparams)
    if use_omegaconf and _omegaconf_available():
        from omegaconf import OmegaConf
        from omegaconf.dictconfig import DictConfig
        from omegaconf.errors import UnsupportedValueType, ValidationError

        resolved = apply_to_collection(deepcopy(hparams), DictConfig, OmegaConf.to_container,
                                       resolve=True)
        with fs.open(str(config_yaml), "w", encoding="utf-8") as handle:
            try:
                OmegaConf.save(resolved, handle)
                return
            except (UnsupportedValueType, ValidationError):
                pass
    if not isinstance(hparams, dict):
        raise TypeError("hparams must be dictionary")
    allowed = {}
    for key, value in hparams.items():
        try:
            value = value.name if isinstance(value, Enum) else value
            yaml.dump(value)
        except (TypeError, ValueError):
            warn(f"Skipping '{key}' parameter because it is not possible to safely dump to YAML.",
                 stacklevel=2)
        else:
            allowed[key] = value
    with fs.open(str(config_yaml), "w", newline="") as handle:
        yaml.dump(allowed, handle)
