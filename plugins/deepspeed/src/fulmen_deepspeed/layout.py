"""DeepSpeed's checkpoint directory as a :class:`~fulmen.checkpoint.layouts.CheckpointLayout`:
``latest`` (or a tag folder) with ``*/mp_rank_*_model_states.pt`` or
``*/zero_pp_rank_*_model_states.pt`` shards, written by DeepSpeed itself or by fulmen versions
before checkpoints were canonical (with ``fulmen_meta.pt`` beside them). Registered by the
plugin's ``fulmen_checkpoint_layouts`` hook, so ``fulmen checkpoint inspect|convert`` read such
a directory, and ``fulmen.checkpoint.service.load`` hands the ones an older fulmen wrote to a
DeepSpeed strategy's engine (:meth:`DeepSpeedLayout.load`). Nothing here imports torch or
deepspeed at import time; nothing in a directory runs (torch's safe unpickler)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fulmen.checkpoint.layouts import CheckpointLayout

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy

META = "fulmen_meta.pt"  # fulmen's own entries beside the engine's shards (older versions)


class DeepSpeedLayout(CheckpointLayout):
    name = "deepspeed"
    description = ("DeepSpeed's directory ('latest' or <tag>/mp_rank_*_model_states.pt), "
                   "written by DeepSpeed or by fulmen before its checkpoints were canonical")

    def detect(self, path: Path) -> bool:
        return (path / "latest").is_file() or any(path.glob("*/mp_rank_*_model_states.pt")) \
            or any(path.glob("*/zero_pp_rank_*_model_states.pt"))

    def read(self, path: Path) -> dict[str, Any]:
        """fulmen's entries (``fulmen_meta.pt``, without the engine's own bookkeeping) and the
        module's weights from the model-state shards, under the user's module's keys."""
        from fulmen.checkpoint import safety
        from fulmen.checkpoint.reading import flatten

        def load(file: Path) -> Any:
            return safety.load_file(file, mmap=zipfile.is_zipfile(file))

        meta = path / META
        content = load(meta) if meta.is_file() else {}
        content = dict(content) if isinstance(content, dict) else {}
        prefix = (content.pop("fulmen_deepspeed", None) or {}).get("prefix", "")
        tensors: dict[str, Any] = {}
        for shard in sorted(path.glob("*/*model_states.pt")):
            module = load(shard).get("module") or {}
            for key, value in flatten(module).items():
                tensors.setdefault(f"state_dict.{key.removeprefix(prefix)}", value)
        return {"content": content, "tensors": tensors}

    def load(self, strategy: Strategy, path: Path, weights_only: bool = True
             ) -> dict[str, Any] | None:
        """A directory an older fulmen's DeepSpeed strategy wrote, read by a DeepSpeed
        strategy's engine (same world size); None otherwise (the service then says how to
        convert it)."""
        from fulmen_deepspeed.strategy import DeepSpeedStrategy

        if not isinstance(strategy, DeepSpeedStrategy):
            return None
        return strategy.load_engine_directory(path, weights_only)
