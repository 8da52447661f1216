"""``ModelSummary`` and ``RichModelSummary``: the module's layer table, logged at fit start."""

from __future__ import annotations

from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.status import configure_logging


class ModelSummary(Callback):
    """Logs ``fulmen.utilities.model_summary.ModelSummary`` of the module (on global rank zero,
    to the ``fulmen`` logger at INFO) when ``fit`` starts.

    Args:
        max_depth: deepest layer nesting shown; 0 turns the summary off, -1 shows every layer.
        **summarize_kwargs: passed to ``summarize`` (``RichModelSummary``: ``header_style``).
    """

    def __init__(self, max_depth: int = 1, **summarize_kwargs: Any) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < -1:
            raise ConfigurationError(f"ModelSummary(max_depth={max_depth!r}): use an int >= -1 "
                                     "(how deep to list submodules)")
        self._max_depth = max_depth
        self._summarize_kwargs = summarize_kwargs

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if not self._max_depth:
            return
        from fulmen.utilities.model_summary import summarize

        summary = summarize(module, max_depth=self._max_depth)
        if trainer.is_global_zero:
            self.summarize(summary._get_summary_data(), summary.total_parameters,
                           summary.trainable_parameters, summary.model_size,
                           summary.total_training_modes, total_flops=summary.total_flops,
                           **self._summarize_kwargs)

    @staticmethod
    def summarize(summary_data: list[tuple[str, list[str]]], total_parameters: int,
                  trainable_parameters: int, model_size: float,
                  total_training_modes: dict[str, int], total_flops: int,
                  **summarize_kwargs: Any) -> None:
        """Show the table (override to send it elsewhere)."""
        from fulmen.utilities.model_summary import _format_summary_table

        table = _format_summary_table(total_parameters, trainable_parameters, model_size,
                                      total_training_modes, total_flops, *summary_data)
        configure_logging().info("\n%s", table)


class RichModelSummary(ModelSummary):
    """``ModelSummary`` drawn as a ``rich`` table on the console (``header_style`` keyword,
    default ``"bold magenta"``)."""

    @staticmethod
    def summarize(summary_data: list[tuple[str, list[str]]], total_parameters: int,
                  trainable_parameters: int, model_size: float,
                  total_training_modes: dict[str, int], total_flops: int,
                  **summarize_kwargs: Any) -> None:
        from rich import get_console
        from rich.table import Table

        from fulmen.utilities.model_summary import (
            get_formatted_model_size,
            get_human_readable_count,
        )

        console = get_console()
        names = [name for name, _ in summary_data]
        table = Table(header_style=summarize_kwargs.get("header_style", "bold magenta"))
        table.add_column(" ", style="dim")
        table.add_column("Name", justify="left", no_wrap=True)
        table.add_column("Type")
        table.add_column("Params", justify="right")
        table.add_column("Mode")
        table.add_column("FLOPs", justify="right")
        for name in ("In sizes", "Out sizes"):
            if name in names:
                table.add_column(name, justify="right", style="white")
        for row in zip(*(column for _, column in summary_data)):
            table.add_row(*row)
        console.print(table)

        def cell(text: str) -> str:
            return "{:<{}}".format(text, 10)

        grid = Table.grid(expand=True)
        grid.add_column()
        grid.add_column()
        for label, value in (
                ("Trainable params", cell(get_human_readable_count(trainable_parameters))),
                ("Non-trainable params",
                 cell(get_human_readable_count(total_parameters - trainable_parameters))),
                ("Total params", cell(get_human_readable_count(total_parameters))),
                ("Total estimated model params size (MB)",
                 cell(get_formatted_model_size(model_size))),
                ("Modules in train mode", str(total_training_modes["train"])),
                ("Modules in eval mode", str(total_training_modes["eval"])),
                ("Total FLOPs", get_human_readable_count(total_flops))):
            grid.add_row(f"[bold]{label}[/]: {value}")
        console.print(grid)
