"""Lightning's DeepSpeed checkpoint helpers (``lightning.pytorch.utilities.deepspeed``), on
fulmen's DeepSpeed plugin (``fulmen_deepspeed``): the tag folder of a ZeRO checkpoint
directory, and its consolidation into one fp32 checkpoint file that loads without DeepSpeed
(``Module.load_from_checkpoint`` reads it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fulmen.errors import ConfigurationError

__all__ = ["convert_zero_checkpoint_to_fp32_state_dict", "ds_checkpoint_dir"]


def ds_checkpoint_dir(checkpoint_dir: str | Path, tag: str | None = None) -> str:
    """The folder of ``tag`` in a DeepSpeed checkpoint directory (the one its ``latest`` file
    names, or fulmen's, when no tag is given)."""
    if tag is None:
        from fulmen_deepspeed.consolidation import checkpoint_tag

        try:
            tag = checkpoint_tag(Path(checkpoint_dir))
        except ConfigurationError as exc:
            raise ValueError(f"Unable to find 'latest' file at "
                             f"{os.path.join(checkpoint_dir, 'latest')}: {exc}") from exc
    directory = os.path.join(checkpoint_dir, tag)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Directory '{directory}' doesn't exist")
    return directory


def convert_zero_checkpoint_to_fp32_state_dict(checkpoint_dir: str | Path,
                                               output_file: str | Path,
                                               tag: str | None = None) -> dict[str, Any]:
    """Write the fp32 weights of a ZeRO checkpoint directory, with the trainer state fulmen
    saved beside them, as one checkpoint file ``output_file``; returns what was written."""
    import torch

    from fulmen_deepspeed.consolidation import META, checkpoint_tag, fp32_state_dict, read_meta

    root = Path(checkpoint_dir)
    if tag is not None and tag != checkpoint_tag(root):
        raise ConfigurationError(f"convert_zero_checkpoint_to_fp32_state_dict(tag={tag!r}): "
                                 f"{str(root)!r} holds the checkpoint {checkpoint_tag(root)!r}; "
                                 "pass tag=None or the directory of that tag")
    state = fp32_state_dict(root)
    client_state: dict[str, Any] = {}
    if (root / META).is_file():
        client_state = {k: v for k, v in read_meta(root).items() if k != "fulmen_deepspeed"}
    client_state["state_dict"] = {k.removeprefix("_forward_module."): v for k, v in state.items()}
    print(f"Saving fp32 state dict to {output_file}")
    torch.save(client_state, output_file)
    return client_state
