"""Checkpoint layouts a strategy's package brings: directory formats other than fulmen's own.

fulmen writes and reads its canonical checkpoints itself (one torch file, or a
``torch.distributed.checkpoint`` directory; :mod:`fulmen.checkpoint.canonical`). A strategy
whose engine writes a directory of its own (DeepSpeed's ``latest`` + ``*/mp_rank_*`` shards,
say) brings a :class:`CheckpointLayout` for it and registers it with the
``fulmen_checkpoint_layouts`` hook, exactly as a third-party strategy would. ``fulmen checkpoint
inspect|convert|verify|diff`` then recognise such a directory, show its tensors and convert it
into a canonical checkpoint. The checkpoint service (:mod:`fulmen.checkpoint.service`) hands
such a directory to the layout's :meth:`CheckpointLayout.load`, which reads it into a strategy
that can (DeepSpeed's engine, on the same world size) or declines, and the service then refuses
it with the ``fulmen checkpoint convert`` command that would. A strategy whose engine writes
only its own format names the layout in ``Strategy.checkpoint_layout``; the service then writes
through :meth:`CheckpointLayout.save`. Nothing in the kernel names any layout.

    from fulmen import hookimpl
    from fulmen.checkpoint.layouts import CheckpointLayout

    class MyEngineLayout(CheckpointLayout):
        name = "my_engine"
        description = "my engine's checkpoint directory (engine.json + shard_*.pt)"

        def detect(self, path):
            return (path / "engine.json").is_file()

        def read(self, path):
            ...  # {"content": {...}, "tensors": {"state_dict.layer.weight": tensor, ...}}

    @hookimpl
    def fulmen_checkpoint_layouts():
        yield MyEngineLayout()
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fulmen.errors import ConfigurationError

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy


class CheckpointLayout:
    """A directory format that is not fulmen's canonical one.

    ``name`` identifies it (``fulmen checkpoint inspect`` shows it as the checkpoint's kind);
    ``description`` says what the directory holds and who writes it, for error messages.
    """

    name: str = ""
    description: str = ""

    def detect(self, path: Path) -> bool:
        """Whether the directory ``path`` is in this layout (read file names only: cheap)."""
        raise NotImplementedError

    def read(self, path: Path) -> dict[str, Any]:
        """The directory's content without running code from it: ``{"content": {...},
        "tensors": {...}}``, ``content`` the checkpoint's entries (progress, hyper-parameters,
        ...) as a canonical checkpoint holds them, ``tensors`` every tensor (whole, on the CPU)
        by dotted name, the module's weights under ``state_dict.<key>`` with the user's module's
        keys. Used to inspect the directory and to convert it into a canonical checkpoint."""
        raise NotImplementedError

    def load(self, strategy: Strategy, path: Path, weights_only: bool = True
             ) -> dict[str, Any] | None:
        """Read the directory ``path`` for ``strategy`` (every rank calls it), as
        ``fulmen.checkpoint.service.load`` returns a checkpoint; nothing in it runs unless
        ``weights_only`` is False. None (default) when ``strategy`` cannot load this layout:
        the service then refuses it with the ``fulmen checkpoint convert`` command."""
        return None

    def save(self, strategy: Strategy, checkpoint: dict[str, Any], path: Path) -> None:
        """Write ``checkpoint`` at ``path`` in this layout for ``strategy`` (every rank calls
        it), for a strategy that names this layout in ``Strategy.checkpoint_layout``. Default:
        this layout is read-only, which is an error."""
        raise ConfigurationError(
            f"strategy {strategy.name!r} writes its checkpoints in the {self.name!r} layout "
            f"(Strategy.checkpoint_layout), but {type(self).__name__} only reads it; leave "
            "checkpoint_layout as None to write fulmen's canonical checkpoints")


def registered() -> list[CheckpointLayout]:
    """Every layout the installed plugins register (``fulmen_checkpoint_layouts``)."""
    from fulmen.kernel.manager import get_plugin_manager

    found: list[CheckpointLayout] = []
    for _, item in get_plugin_manager().collect("fulmen_checkpoint_layouts"):
        layout = item() if isinstance(item, type) else item
        if isinstance(layout, CheckpointLayout):
            found.append(layout)
    return found


def layout_of(path: Path) -> CheckpointLayout | None:
    """The registered layout the directory ``path`` is in, or None."""
    return next((layout for layout in registered() if layout.detect(path)), None)


def named(name: str, strategy: str | None = None) -> CheckpointLayout:
    """The registered layout called ``name`` (``strategy``: the strategy that declared it, for
    the error)."""
    found = registered()
    for layout in found:
        if layout.name == name:
            return layout
    who = f"strategy {strategy!r} declares checkpoint_layout={name!r}, but" if strategy \
        else f"checkpoint layout {name!r}:"
    known = ", ".join(repr(layout.name) for layout in found) or "none"
    raise ConfigurationError(f"{who} no installed plugin registers that layout "
                             f"(fulmen_checkpoint_layouts); registered: {known}")
