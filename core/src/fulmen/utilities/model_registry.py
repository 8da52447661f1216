"""Lightning's model registry paths (``ckpt_path="registry:<model>[:version:<v>]"``): where
such a model lands under ``default_root_dir`` and its download through ``litmodels``
(lightning.ai's registry client). fulmen's Trainer takes no ``model_registry=`` argument, so a
registry path must name its model."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from fulmen.errors import MissingDependencyError

__all__ = ["download_model_from_registry", "find_model_local_ckpt_path", "is_registry"]


def is_registry(text: Any) -> bool:
    """Whether ``text`` is ``"registry"`` or starts with ``"registry:"`` (any case)."""
    return isinstance(text, str) and re.match(r"^registry(:.*|$)", text.lower()) is not None


def _model_name(ckpt_path: Any, default_model_registry: str | None) -> str:
    if not ckpt_path or not is_registry(ckpt_path):
        raise ValueError(f"Invalid registry path: {ckpt_path}")
    parts = str(ckpt_path).split(":")
    name = parts[1] if len(parts) >= 2 and parts[1].lower() != "version" else ""
    version = ""
    if len(parts) == 3 and parts[1].lower() == "version":
        version = parts[2]
    elif len(parts) == 4 and parts[2].lower() == "version":
        version = parts[3]
    name = name or default_model_registry or ""
    if not name:
        raise ValueError(f"Invalid model registry: '{ckpt_path}'")
    return f"{name}:{version}" if version else name


def _model_folder(model_name: str, default_root_dir: str | Path) -> str:
    return os.path.join(default_root_dir, model_name.replace("/", "_").replace(":", "_"))


def find_model_local_ckpt_path(ckpt_path: Any, default_model_registry: str | None,
                               default_root_dir: str | Path) -> str:
    """The ``.ckpt`` file a registry path's download left under ``default_root_dir``."""
    model = _model_name(ckpt_path, default_model_registry)
    folder = _model_folder(model, default_root_dir)
    files = [f for f in os.listdir(folder) if f.endswith(".ckpt")]
    if not files:
        raise RuntimeError(f"Parsing files from downloaded model: {model}")
    return os.path.join(folder, files[0])


def download_model_from_registry(ckpt_path: Any, trainer: Any) -> None:
    """Download the model a registry path names (local rank 0, with ``litmodels``) into
    ``trainer.default_root_dir``; every process waits for it."""
    if trainer.local_rank == 0:
        import importlib.util

        if importlib.util.find_spec("litmodels") is None:
            raise MissingDependencyError("The `litmodels` package is not installed. Please "
                                         "install it with `pip install litmodels`.",
                                         name="litmodels")
        from litmodels import download_model

        model = _model_name(ckpt_path, None)
        if not download_model(model, download_dir=_model_folder(model, trainer.default_root_dir)):
            raise RuntimeError(f"Download model failed - {model}")
    trainer.strategy.barrier("download_model_from_registry")
