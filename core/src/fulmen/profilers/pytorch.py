"""``PyTorchProfiler``: ``torch.profiler`` around the profiled actions, a table at the end and a
Chrome/Perfetto trace (open it in ``ui.perfetto.dev`` or TensorBoard's profiler plugin)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fulmen.profilers.base import Profiler


class PyTorchProfiler(Profiler):
    """Profiles from the first action to the end of the run. ``sort_by_key``: the column of
    ``key_averages().table`` to sort by; ``export_to_chrome``: write ``<...>.pt.trace.json`` into
    ``dirpath`` (the Trainer's log directory by default). Other keyword arguments go to
    ``torch.profiler.profile`` (``record_shapes=True``, ``profile_memory=True``...)."""

    def __init__(self, dirpath: str | Path | None = None, filename: str | None = None,
                 sort_by_key: str | None = None, row_limit: int = 20,
                 export_to_chrome: bool = True, **profiler_kwargs: Any) -> None:
        super().__init__(dirpath, filename)
        self.sort_by_key = sort_by_key or "cpu_time_total"
        self.row_limit = row_limit
        self.export_to_chrome = export_to_chrome
        self.profiler_kwargs = profiler_kwargs
        self.profiler: Any = None
        self._records: dict[str, Any] = {}
        self.trace_path: Path | None = None

    def start(self, action_name: str) -> None:
        import torch

        if self.profiler is None:
            self.profiler = torch.profiler.profile(**self.profiler_kwargs)
            self.profiler.__enter__()
        record = torch.autograd.profiler.record_function(action_name)
        record.__enter__()
        self._records[action_name] = record

    def stop(self, action_name: str) -> None:
        record = self._records.pop(action_name, None)
        if record is not None:
            record.__exit__(None, None, None)

    def summary(self) -> str:
        if self.profiler is None:
            return ""
        for name in list(self._records):
            self.stop(name)
        self.profiler.__exit__(None, None, None)
        if self.export_to_chrome and self.dirpath:
            self.trace_path = Path(self.dirpath) / self.prepare_filename(extension=".pt.trace.json")
            self.trace_path.parent.mkdir(parents=True, exist_ok=True)
            self.profiler.export_chrome_trace(str(self.trace_path))
        table = self.profiler.key_averages().table(sort_by=self.sort_by_key,
                                                   row_limit=self.row_limit)
        self.profiler = None
        where = f"\ntrace: {self.trace_path}" if self.trace_path else ""
        return f"{self.stage_title()}Profiler Report\n{table}{where}"

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "profiler": None, "_records": {}}
