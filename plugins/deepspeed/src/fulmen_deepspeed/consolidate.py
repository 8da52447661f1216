"""Turn a DeepSpeed checkpoint directory (shards from every rank) into one fp32 state dict.

The result is a plain ``{name: tensor}`` dict with the user's module's keys, loadable without
DeepSpeed: ``torch.load(path, weights_only=True)`` then ``module.load_state_dict(...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from fulmen import ConfigurationError

TAG = "checkpoint"
META = "fulmen_meta.pt"


def fp32_state_dict(ckpt_dir: str | Path) -> dict[str, torch.Tensor]:
    """The consolidated fp32 weights of a checkpoint directory written by DeepSpeedStrategy
    (or any DeepSpeed ZeRO checkpoint directory with a ``latest`` file)."""
    root = Path(ckpt_dir)
    if not root.is_dir():
        raise ConfigurationError(f"{str(root)!r} is not a directory; a DeepSpeed checkpoint is "
                                 "the directory DeepSpeedStrategy (or engine.save_checkpoint) "
                                 "wrote")
    tag = TAG if (root / TAG).is_dir() else None
    if tag is None and not (root / "latest").is_file():
        raise ConfigurationError(f"{str(root)!r} holds no DeepSpeed checkpoint (neither a "
                                 f"{TAG!r} folder nor a 'latest' file)")
    prefix, stage = "", None
    if (root / META).is_file():
        info = torch.load(root / META, map_location="cpu", weights_only=True).get(
            "fulmen_deepspeed", {})
        prefix, stage = info.get("prefix", ""), info.get("stage")
    if stage == 0:
        shard = root / (tag or (root / "latest").read_text().strip()) / \
            "mp_rank_00_model_states.pt"
        state = torch.load(shard, map_location="cpu", weights_only=False)["module"]
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
        target = Path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, target)
    return state
