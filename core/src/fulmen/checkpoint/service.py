"""Saving, loading and removing a checkpoint for a strategy: the one place that decides how.

The Trainer, Lite, ``ModelCheckpoint`` and the conformance kit call :func:`save`, :func:`load`
and :func:`remove` with the strategy that runs; the strategy only declares what the service
needs to know (``fulmen.Strategy``):

- :attr:`~fulmen.Strategy.sharded_checkpoint`: every rank writes its shards into a canonical
  ``torch.distributed.checkpoint`` directory (:func:`fulmen.checkpoint.canonical.save_directory`);
  otherwise rank zero writes one file through the strategy's ``checkpoint_io``;
- :meth:`~fulmen.Strategy.checkpoint_template`: the shapes a directory is read into (each rank
  reads its part);
- :attr:`~fulmen.Strategy.checkpoint_layout`: the name of a registered
  :class:`~fulmen.checkpoint.layouts.CheckpointLayout` (``fulmen_checkpoint_layouts`` hook) when
  the strategy's engine writes a directory format of its own; None (canonical) by default;
- the state hooks (``module_state_dict``, ``optimizer_state`` and their ``load_`` sides), which
  the Trainer and Lite use to build the checkpoint's entries.

A directory in a registered layout is read by that layout's
:meth:`~fulmen.checkpoint.layouts.CheckpointLayout.load` (DeepSpeed's engine reads its own
directories on the same world size), or refused with the ``fulmen checkpoint convert`` command
that turns it into a canonical checkpoint. Nothing here names a strategy or a layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fulmen.checkpoint import canonical, manifest
from fulmen.errors import ConfigurationError

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy
    from fulmen.checkpoint.layouts import CheckpointLayout


def save(strategy: Strategy, checkpoint: dict[str, Any], path: Any) -> None:
    """Write ``checkpoint`` at ``path`` as ``strategy`` declares: in its layout, as a canonical
    DCP directory from every rank (``sharded_checkpoint``), or as one file from rank zero
    (through ``checkpoint_io``). Every rank calls this."""
    layout = _declared_layout(strategy)
    if layout is not None:
        layout.save(strategy, checkpoint, Path(path))
    elif strategy.sharded_checkpoint:
        canonical.save_directory(strategy, checkpoint, path)
    elif strategy.is_global_zero:
        strategy.checkpoint_io.save_checkpoint(checkpoint, path)


def load(strategy: Strategy, path: Any, weights_only: bool | None = None) -> dict[str, Any]:
    """Read any fulmen checkpoint for ``strategy``: a file (through ``checkpoint_io``), a
    canonical DCP directory from any strategy and world size (into ``checkpoint_template()``
    when the strategy returns one), a directory in a registered layout that the layout can load
    into ``strategy``, a plain ``torch.save`` file or a Lightning 2.x checkpoint. Nothing in it
    runs unless ``weights_only`` is False (None: torch's rule, see
    :func:`~fulmen.checkpoint.safety.resolve_weights_only`). The result holds this rank's random
    states and its place in the epoch."""
    from fulmen.checkpoint import reading, remote, rng, safety

    weights_only = safety.resolve_weights_only(weights_only)
    if not canonical.is_directory(path):
        content = strategy.checkpoint_io.load_checkpoint(path, map_location="cpu",
                                                         weights_only=weights_only)
        if isinstance(content, dict):
            manifest.check_version(content.get(manifest.KEY), str(path))
    else:
        root = Path(remote.local(path))
        kind = reading.kind_of(root)
        if kind != "dcp":
            from fulmen.checkpoint.layouts import named

            own = named(kind).load(strategy, root, weights_only)
            if own is None:
                raise ConfigurationError(
                    f"checkpoint {str(root)!r} is a {kind!r} directory (a layout its strategy's "
                    f"package registers, not fulmen's canonical one); {strategy.name} reads "
                    f"fulmen's canonical checkpoints. Convert it first: fulmen checkpoint "
                    f"convert {str(root)!r} {str(root) + '.ckpt'!r} --to file")
            return own
        content = canonical.read_directory(root, weights_only, strategy.checkpoint_template(),
                                           rank=strategy.global_rank, reader=strategy.name,
                                           readers=strategy.world_size)
    if isinstance(content, dict):  # this rank's own random states and place in the epoch
        from fulmen.trainer.progress import rescale

        content = rng.select(content, strategy.global_rank, strategy.world_size)
        content = rescale(content, strategy.data_parallel_size, strategy.global_rank)
    return content


def remove(strategy: Strategy, path: Any) -> None:
    """Delete a checkpoint ``strategy`` wrote (a file through ``checkpoint_io``, or a
    directory); rank zero does it, the others return."""
    if not strategy.is_global_zero:
        return
    if canonical.is_directory(path):
        canonical.remove_directory(path)
    else:
        strategy.checkpoint_io.remove_checkpoint(path)


def _declared_layout(strategy: Strategy) -> CheckpointLayout | None:
    if strategy.checkpoint_layout is None:
        return None
    from fulmen.checkpoint.layouts import named

    return named(strategy.checkpoint_layout, strategy.name)
