"""``Metrics``: the one owner of what ``self.log`` produced in a Trainer's run.

It holds the :class:`~fulmen.trainer.results.Results` that ``self.log`` writes to now
(``current``) and the training loop's (``train``), the latest values callbacks monitor, what
went to the loggers and which names the progress bar shows; it sends values to the loggers on
Lightning's step axis. The Trainer exposes it as ``trainer.metrics``; ``Module.log``, the hook
table and the loops use only the members documented here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from fulmen.trainer.results import CallbackMetrics, HostScalar, Results, step_tensor

if TYPE_CHECKING:
    from fulmen.trainer.host import TrainerHost


class Metrics:
    """What the loops logged, for callbacks, the progress bar and the loggers."""

    def __init__(self, trainer: TrainerHost) -> None:
        self.trainer = trainer
        #: the Results ``self.log`` writes to now (None outside a loop: ``self.log`` refuses)
        self.current: Results | None = None
        #: the running (or last) training epoch's Results: its step values are monitored
        self.train: Results | None = None
        #: latest epoch values and what callbacks wrote (``trainer.callback_metrics``)
        self.values: dict[str, torch.Tensor] = {}
        #: what was last logged (``trainer.logged_metrics``): values as given (a HostScalar
        #: for a CPU step value, made a tensor when read)
        self.logged: dict[str, Any] = {}
        #: the training Results whose step values were folded into ``values`` and ``logged``
        #: at its epoch's end (they are no longer laid over what came after them)
        self._folded: Results | None = None
        #: names logged with ``prog_bar=True`` whose epoch values are kept in ``values``
        self.prog_bar_names: set[str] = set()
        #: per (stage, dataloader): evaluation batches run, the step axis of per-batch values
        self.eval_batches_seen: dict[tuple[str, int], int] = {}
        #: epoch values finished with ``log=False``, sent with the next finish that logs
        self._unlogged: dict[str, torch.Tensor] = {}
        #: the sanity check's epoch values while its epoch-end hooks run: shown in
        #: ``callback_metrics`` (as Lightning's), never kept
        self.sanity_values: dict[str, torch.Tensor] = {}

    def start_stage(self) -> None:
        """A stage begins: no callback, logged or progress-bar metrics and no evaluation step
        counts carry over (Lightning resets them when a stage starts: ``trainer.test`` after
        ``fit`` reports only what the test logged)."""
        self.values.clear()
        self.train = self._folded = None
        self.logged = {}
        self.prog_bar_names = set()
        self.eval_batches_seen = {}
        self._unlogged, self.sanity_values = {}, {}

    def new_results(self, stage: str) -> Results:
        """An empty Results for a loop of ``stage``, reducing through the strategy."""
        return Results(stage, self.trainer.strategy.reduce)

    # ------------------------------------------------------------------ reading

    def _running_train(self) -> Results | None:
        """The training Results whose step values are newer than anything else kept: the
        running epoch's (None once its epoch has ended and they were folded in)."""
        return self.train if self.train is not self._folded else None

    @staticmethod
    def _step_metrics(results: Results, logged: bool) -> dict[str, Any]:
        """The latest step values of ``results``, by Lightning's names: for callbacks
        (``logged=False``) the step name and, for values also logged per epoch, the plain name;
        for the loggers the step name of those logged with ``logger=True``."""
        out: dict[str, Any] = {}
        for entry in results.entries.values():
            stored = results.step_values.get(entry.step_name)
            if not entry.on_step or stored is None:
                continue
            if logged:
                if entry.logger:
                    out[entry.step_name] = stored
            else:
                out[entry.step_name] = value = step_tensor(stored)
                if entry.on_epoch:
                    out[entry.name] = value
        return out

    def callback_metrics(self) -> CallbackMetrics:
        """Latest value of everything logged: step values during an epoch, then epoch values;
        writes to the returned mapping land in ``values``."""
        out = dict(self.values)
        results = self._running_train()
        if results is not None:
            out.update(self._step_metrics(results, logged=False))
        out.update(self.sanity_values)
        return CallbackMetrics(out, self.values)

    def logged_metrics(self) -> dict[str, Any]:
        """What was logged, by Lightning's names (``_step``/``_epoch`` where a value is logged
        both ways): the latest training step values (every batch's, whether or not it went to
        a logger at that step), evaluation step values, epoch values and what callbacks logged
        through :meth:`log_to_loggers`. ``self.log`` values are tensors; what a callback logged
        is kept as given (Lightning's ``logged_metrics``)."""
        out = dict(self.logged)
        results = self._running_train()
        if results is not None:
            out.update(self._step_metrics(results, logged=True))
        return {k: step_tensor(v) if isinstance(v, HostScalar) else v for k, v in out.items()}

    def progress_bar_metrics(self) -> dict[str, float]:
        """Values logged with ``prog_bar=True``, as floats."""
        names = set(self.prog_bar_names)
        for results in (self.train, self.current):
            if results is not None:
                for e in results.entries.values():
                    if e.prog_bar:
                        names.update({e.step_name, e.epoch_name})
        return {k: float(v) for k, v in self.callback_metrics().items() if k in names}

    # ------------------------------------------------------------------ sending to loggers

    def log_to_loggers(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """See :meth:`Trainer.log_to_loggers`."""
        if not metrics:
            return
        trainer = self.trainer
        self.logged.update(metrics)
        values = {k: float(v) for k, v in metrics.items()}
        if trainer.loggers and trainer.is_global_zero:
            training_axis = step is None
            if step is None:
                step = trainer.batches_that_stepped
                values = {**values, "epoch": float(trainer.current_epoch)}
            trainer.logger_set.log_metrics(values, step, training_axis=training_axis)
            trainer.logger_set.flush()  # no lag: what callbacks queued at this step goes too

    def log_step(self, results: Results) -> None:
        """A training step's values logged with ``on_step=True`` go to the loggers."""
        entries = results.entry_for_step_name()
        self.log_to_loggers({name: value for name, value in results.step_values.items()
                             if entries[name].logger})

    def log_eval_step(self, results: Results, step: int) -> None:
        """Validation/test values logged with ``on_step=True`` (``name_step`` when also per
        epoch): to the loggers at ``step`` (per dataloader, the batches it ran in this fit or
        this validate/test call, as Lightning); not to callback metrics (Lightning keeps
        per-batch evaluation values out of them)."""
        entries = results.entry_for_step_name()
        self.log_to_loggers({name: value for name, value in results.step_values.items()
                             if entries[name].logger}, step)

    def finish(self, results: Results, log: bool = True) -> dict[str, torch.Tensor]:
        """Epoch values → callback metrics and loggers (on the training step axis); returns
        them. ``log=False``: they go to the loggers with the next call that logs (an
        evaluation's values are finished before its epoch-end hooks, which read them in
        ``callback_metrics`` as in Lightning, and logged once with what those hooks log)."""
        finished: dict[str, torch.Tensor] = {}
        to_log: dict[str, torch.Tensor] = {}
        if results is self.train and results is not self._folded:
            # the epoch's last step values stay, under the epoch values logged after them
            self.values.update(self._step_metrics(results, logged=False))
            self.logged.update(self._step_metrics(results, logged=True))
            self._folded = results
        for name, (entry, value) in results.epoch_values().items():
            finished[name] = self.values[name] = self.values[entry.name] = value
            if entry.prog_bar:
                self.prog_bar_names.add(name)
            if entry.logger:
                to_log[name] = value
        if log:
            self.log_to_loggers({**self._unlogged, **to_log})
            self._unlogged = {}
        else:
            self._unlogged.update(to_log)
        return finished

    # ------------------------------------------------------------------ trials

    def snapshot(self) -> tuple[Any, ...]:
        """Everything, for :meth:`restore` after a trial (``Trainer.run_trial``)."""
        return (self.current, self.train, self._folded, dict(self.values), dict(self.logged),
                set(self.prog_bar_names))

    def restore(self, snapshot: tuple[Any, ...]) -> None:
        (self.current, self.train, self._folded, self.values, self.logged,
         self.prog_bar_names) = snapshot

    # ------------------------------------------------------------------ spawned workers

    def worker_state(self) -> dict[str, Any]:
        """What a spawned rank 0 hands back: callback and logged metrics, on the CPU."""
        def cpu(metrics: dict[str, Any]) -> dict[str, Any]:
            return {k: v.detach().cpu() if isinstance(v, torch.Tensor) else v
                    for k, v in metrics.items()}

        return {"callback_metrics": cpu(self.callback_metrics()),
                "logged_metrics": cpu(self.logged_metrics())}

    def load_worker_state(self, state: dict[str, Any]) -> None:
        self.values = dict(state["callback_metrics"])
        self.logged = dict(state["logged_metrics"])
