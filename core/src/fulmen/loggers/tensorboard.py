"""``TensorBoardLogger``: event files that TensorBoard reads."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

from fulmen import look, storage
from fulmen.api.logger import RunRecord
from fulmen.errors import ConfigurationError
from fulmen.loggers.base import VersionedDir, VersionedLogger
from fulmen.loggers.csv import _plain
from fulmen.loggers.tb_events import EventFile

if TYPE_CHECKING:
    import torch

#: ``SummaryWriter``'s keyword arguments besides ``log_dir`` (torch 2.x); others are checked
#: against its signature, so that a name a later torch adds is taken too
_WRITER_KWARGS = ("comment", "purge_step", "max_queue", "flush_secs", "filename_suffix")


class TensorBoardLogger(VersionedLogger):
    """Writes ``<save_dir>/<name>/version_<N>[/<sub_dir>]/events.out.tfevents.*`` that
    TensorBoard reads (needs the ``tensorboard`` package), plus ``hparams.yaml``.

    Metrics and hyper-parameters are written by the training process itself
    (:class:`~fulmen.loggers.tb_events.EventFile`, no writer thread); ``experiment`` is a
    ``torch.utils.tensorboard.SummaryWriter`` on the same folder, made when first used, for
    images, histograms and the rest. ``writer_kwargs`` go to it (checked here); ``flush_secs``
    (default 120) and ``filename_suffix`` also apply to the metrics file.

    Lightning's arguments: ``log_graph`` adds the module's graph (traced on its
    ``example_input_array``) when fit starts; ``default_hp_metric`` logs ``hp_metric = -1``
    with hyper-parameters logged without metrics, so that TensorBoard's HPARAMS tab lists the
    run; ``prefix`` starts every metric name (``"<prefix>-<name>"``); ``sub_dir`` is a folder
    inside the version's. ``name`` defaults to ``fulmen_logs`` (``lightning_logs`` under ``fulmen
    run``'s Lightning look, :mod:`fulmen.look`)."""

    LOGGER_JOIN_CHAR = "-"

    def __init__(self, save_dir: str | os.PathLike[str] = ".",
                 name: str = look.default_log_name(),  # lightning_logs under fulmen run
                 version: int | str | None = None, log_graph: bool = False,
                 default_hp_metric: bool = True, prefix: str = "",
                 sub_dir: str | os.PathLike[str] | None = None, **writer_kwargs: Any) -> None:
        _check_writer_kwargs(writer_kwargs)
        self._dir = VersionedDir(save_dir, name, version)
        self._log_graph = log_graph
        self._default_hp_metric = default_hp_metric
        self._prefix = prefix
        self.sub_dir = os.fspath(sub_dir) if sub_dir is not None else None
        self._writer_kwargs = writer_kwargs
        self._writer: Any = None
        self._events: EventFile | None = None
        self.hparams: dict[str, Any] = {}

    @property
    def log_dir(self) -> str:
        """The version's folder, or ``sub_dir`` inside it (``~`` and ``$VARS`` expanded)."""
        log_dir = super().log_dir
        if self.sub_dir is not None:
            log_dir = os.path.expanduser(os.path.expandvars(storage.join(log_dir,
                                                                         self.sub_dir)))
        return log_dir

    @property
    def experiment(self) -> Any:
        """The ``SummaryWriter`` (created on first use)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            storage.makedirs(self.log_dir)
            self._writer = SummaryWriter(log_dir=self.log_dir, **self._writer_kwargs)
        return self._writer

    @property
    def events(self) -> EventFile:
        """The file metrics and hyper-parameters go to (created on first use)."""
        if self._events is None:
            self._events = EventFile(self.log_dir, self._writer_kwargs.get("flush_secs", 120),
                                     self._writer_kwargs.get("filename_suffix", ""))
        return self._events

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        # a writer holds an open file: each process makes its own
        state["_writer"] = state["_events"] = None
        return state

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if self._prefix:
            metrics = {f"{self._prefix}{self.LOGGER_JOIN_CHAR}{k}": v for k, v in metrics.items()}
        self.events.scalars(metrics, step)

    def log_hyperparams(self, params: dict[str, Any], metrics: Any = None,
                        step: int | None = None) -> None:
        """Keep ``params`` (``hparams.yaml``, a text summary) and, with ``metrics`` (a dict or
        one number, ``hp_metric``; ``-1`` when ``default_hp_metric`` and none given), log the
        metrics and TensorBoard's HPARAMS summaries for them."""
        import yaml
        from torch.utils.tensorboard.summary import hparams, text

        self.hparams.update(params)
        with storage.open_file(storage.join(self.log_dir, "hparams.yaml"), "w") as handle:
            yaml.safe_dump(_plain(self.hparams), handle, sort_keys=True)
        flat = {k: v if isinstance(v, int | float | str | bool) else repr(v)
                for k, v in _flatten(_plain(self.hparams)).items()}
        self.events.add(text("hparams", "\n".join(f"{k}: {v}" for k, v in flat.items())), 0)
        if metrics is None:
            metrics = {"hp_metric": -1} if self._default_hp_metric else None
        elif not isinstance(metrics, dict):
            metrics = {"hp_metric": metrics}
        if metrics:
            self.log_metrics(metrics, step)
            for summary in hparams(flat, metrics):  # the experiment, session start and end
                self.events.add(summary, step)

    def log_graph(self, model: torch.nn.Module, input_array: Any = None) -> None:
        """With ``log_graph=True``: the module's graph, traced on ``input_array`` (default:
        its ``example_input_array``, moved to the module's device); a warning says why not
        when there is nothing to trace it on."""
        if not self._log_graph:
            return
        import torch

        from fulmen.apply import apply_to_tensors
        from fulmen.module import Module, jit_tracing

        example = model.example_input_array if isinstance(model, Module) else None
        given = example if input_array is None else input_array
        if given is None:
            warnings.warn("TensorBoardLogger(log_graph=True) could not log the graph: set "
                          "the module's example_input_array, or pass input_array", stacklevel=2)
            return
        if not isinstance(given, torch.Tensor | tuple):
            warnings.warn(f"TensorBoardLogger(log_graph=True) could not log the graph: the "
                          f"input is a {type(given).__name__}; give a tensor, or a tuple of the "
                          "positional arguments of the module's forward", stacklevel=2)
            return
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        with jit_tracing():  # the trace walks the module's attributes, `trainer` among them
            self.experiment.add_graph(model, apply_to_tensors(given, lambda t: t.to(device)))

    def read_run(self) -> RunRecord:
        """What TensorBoard reads from this run's folder (after a flush)."""
        return _read_run(self)

    def save(self) -> None:
        if self._events is not None:
            self._events.flush()
        if self._writer is not None:
            self._writer.flush()

    def finalize(self, status: str) -> None:
        if self._events is not None:
            self._events.close()
            self._events = None
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None


def _read_run(logger: TensorBoardLogger) -> RunRecord:
    """The event files (TensorBoard's own ``EventAccumulator``) and ``hparams.yaml``."""
    import yaml
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(logger.log_dir, size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    metrics: dict[str, list[tuple[int, float]]] = {}
    tags = accumulator.Tags()
    for tag in tags.get("scalars", []):
        metrics[tag] = [(e.step, float(e.value)) for e in accumulator.Scalars(tag)]
    for tag in tags.get("tensors", []):  # scalars written as tensor summaries
        events = accumulator.Tensors(tag)
        if events and not events[0].tensor_proto.tensor_shape.dim and \
                events[0].tensor_proto.float_val:
            metrics[tag] = [(e.step, float(e.tensor_proto.float_val[0])) for e in events]
    params: dict[str, Any] = {}
    path = storage.join(logger.log_dir, "hparams.yaml")
    if storage.exists(path):
        with storage.open_file(path, "r") as handle:
            params = _flatten(yaml.safe_load(handle) or {})
    return RunRecord(metrics, params)


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as ``outer/inner`` keys (Lightning's, for TensorBoard's HPARAMS tab)."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name))
        else:
            flat[name] = value
    return flat


def _check_writer_kwargs(kwargs: dict[str, Any]) -> None:
    """Refuse, at construction, a keyword ``SummaryWriter`` would not take."""
    unknown = sorted(set(kwargs) - set(_WRITER_KWARGS))
    if not unknown:
        return
    import inspect

    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # without tensorboard the first event fails with how to install it
        return
    taken = [n for n in inspect.signature(SummaryWriter).parameters if n != "log_dir"]
    unknown = [name for name in unknown if name not in taken]
    if unknown:
        raise ConfigurationError(
            f"TensorBoardLogger({', '.join(f'{n}={kwargs[n]!r}' for n in unknown)}): "
            f"{'these are' if len(unknown) > 1 else 'this is'} neither an argument of the "
            "logger (save_dir, name, version, log_graph, default_hp_metric, prefix, sub_dir) nor "
            f"of torch's SummaryWriter, which takes {', '.join(taken)}")
