"""Turn a DeepSpeed checkpoint directory (shards from every rank) into one fp32 state dict.

The result is a plain ``{name: tensor}`` dict with the user's module's keys, loadable without
DeepSpeed: ``torch.load(path, weights_only=True)`` then ``module.load_state_dict(...)``.

Nothing in a checkpoint directory runs code: every file is opened with torch's safe unpickler
(plus DeepSpeed's own state classes, :func:`safe_globals`) before DeepSpeed reads it, and
DeepSpeed's own ``torch.load`` calls are held to the same rule while it does.
"""

from __future__ import annotations

import importlib
import pickle
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from fulmen import ConfigurationError
from fulmen.checkpoint import manifest, safety

TAG = "checkpoint"
META = "fulmen_meta.pt"
_TAG_NAME = re.compile(r"[A-Za-z0-9_.=-]{1,200}")
#: DeepSpeed's plain-data classes its optimizer shards pickle (loss scalers, ZeRO stage,
#: fragment addresses); nothing else outside torch's own safe set is accepted.
_DEEPSPEED_CLASSES = (
    ("deepspeed.runtime.fp16.loss_scaler", "LossScaler"),
    ("deepspeed.runtime.fp16.loss_scaler", "DynamicLossScaler"),
    ("deepspeed.runtime.fp16.loss_scaler", "LossScaleConfig"),
    ("deepspeed.runtime.fp16.loss_scaler", "LossScaleProfile"),
    ("deepspeed.runtime.zero.config", "ZeroStageEnum"),
    ("deepspeed.utils.tensor_fragment", "fragment_address"),
)


def safe_globals() -> list[Any]:
    """The DeepSpeed classes a checkpoint may hold (those this DeepSpeed version has)."""
    found = []
    for module_name, name in _DEEPSPEED_CLASSES:
        cls = getattr(importlib.import_module(module_name), name, None)
        if cls is not None:
            found.append(cls)
    return found


def checkpoint_tag(root: Path) -> str:
    """The tag folder to read: fulmen's, else the one DeepSpeed's ``latest`` file names (a
    plain folder name inside ``root``; anything else is refused)."""
    if (root / TAG).is_dir():
        return TAG
    latest = root / "latest"
    if not latest.is_file():
        raise ConfigurationError(f"{str(root)!r} holds no DeepSpeed checkpoint (neither a "
                                 f"{TAG!r} folder nor a 'latest' file)")
    text = latest.read_bytes()[:256].decode("utf-8", "replace").strip()
    if not _TAG_NAME.fullmatch(text) or text in (".", "..") or not (root / text).is_dir():
        raise ConfigurationError(
            f"{str(latest)!r} does not name a checkpoint folder inside {str(root)!r} (it "
            f"reads {text[:60]!r}); it should hold the name of a tag folder beside it")
    return text


def check_directory(root: Path, tag: str) -> None:
    """Open every pickle file of the checkpoint safely (tensors memory-mapped, not read);
    refuse the directory at the first file that would run code or is damaged."""
    files = sorted((root / tag).glob("*.pt"))
    if (root / META).is_file():
        files.append(root / META)
    if not files:
        raise ConfigurationError(f"{str(root / tag)!r} holds no checkpoint files (*.pt)")
    safety.check_files(files, allow=safe_globals())


def read_meta(root: Path, trusted: bool = False) -> dict[str, Any]:
    """fulmen's ``fulmen_meta.pt`` of a checkpoint directory, loaded safely (``trusted``: as
    the caller who trusts the files asked, with every Python object)."""
    meta = torch.load(root / META, map_location="cpu", weights_only=False) if trusted else \
        safety.load_file(root / META)
    if not isinstance(meta, dict):
        raise ConfigurationError(f"{str(root / META)!r} is not fulmen's checkpoint metadata "
                                 f"(it holds a {type(meta).__name__}, not a dict)")
    return meta


@contextmanager
def deepspeed_reads(root: Path, tag: str, trusted: bool = False) -> Iterator[None]:
    """Check the directory, then let DeepSpeed read it with only safe loads allowed (unless
    the caller ``trusted`` the files: ``weights_only=False``)."""
    if trusted:
        yield
        return
    check_directory(root, tag)
    manifest.check_complete(root)
    allow = safe_globals()
    try:
        with safety.weights_only_everywhere(allow):
            yield
    except pickle.UnpicklingError as exc:  # a file changed after the check
        raise ConfigurationError(f"{str(root)!r} is not a trusted checkpoint: DeepSpeed read "
                                 f"a file safe loading refuses ({exc})") from exc


def fp32_state_dict(ckpt_dir: str | Path, trusted: bool = False) -> dict[str, torch.Tensor]:
    """The consolidated fp32 weights of a checkpoint directory written by DeepSpeedStrategy
    (or any DeepSpeed ZeRO checkpoint directory with a ``latest`` file). Read safely unless
    ``trusted`` (the caller passed ``weights_only=False``)."""
    root = Path(ckpt_dir)
    if not root.is_dir():
        raise ConfigurationError(f"{str(root)!r} is not a directory; a DeepSpeed checkpoint is "
                                 "the directory DeepSpeedStrategy (or engine.save_checkpoint) "
                                 "wrote")
    tag = checkpoint_tag(root)
    prefix, stage = "", None
    with deepspeed_reads(root, tag, trusted):
        if (root / META).is_file():
            info = read_meta(root, trusted).get("fulmen_deepspeed", {})
            prefix, stage = info.get("prefix", ""), info.get("stage")
        if stage == 0:
            shard = root / tag / "mp_rank_00_model_states.pt"
            state = (torch.load(shard, map_location="cpu", weights_only=False) if trusted
                     else safety.load_file(shard, allow=safe_globals()))["module"]
        else:
            from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

            state = get_fp32_state_dict_from_zero_checkpoint(str(root), tag=tag)
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        name = key[len(prefix):] if prefix and key.startswith(prefix) else key
        tensor = value.detach().cpu().contiguous()
        out[name] = tensor.float() if tensor.is_floating_point() else tensor
    return out


def consolidate(ckpt_dir: str | Path, out: str | Path | None = None) -> dict[str, Any]:
    """Consolidate ``ckpt_dir`` into one fp32 state dict; write it to ``out`` if given."""
    state = fp32_state_dict(ckpt_dir)
    if out is not None:
        from fulmen.api.checkpoint_io import TorchCheckpointIO

        TorchCheckpointIO().save_checkpoint(state, out)
    return state
