"""The logger contract's clauses (docs/plugin-contracts.md, "Loggers"): data only, no torch.
The checks that prove them are in :mod:`fulmen.testing.logger_checks`."""

from __future__ import annotations

#: (id, kind, promise, fix) of each clause; :mod:`fulmen.testing.clauses` makes them ``Clause``s
LOGGER_CLAUSES: list[tuple[str, str, str, str]] = [
    ("logger.rank_zero", "logger",
           "on a rank other than zero, constructing the logger (for_conformance), pickling it, "
           "reading version/name/state_dict and finalize create no run and no file and return "
           "at once",
           "create the tracker's run lazily, on global rank zero only: decorate the experiment "
           "getter with fulmen.api.logger.rank_zero_experiment and keep run ids, not runs, in "
           "__getstate__"),
    ("logger.fit", "logger",
           "a Trainer fit logs one run whose metrics the tracker reads back at steps 0, 1, 2... "
           "(each step once, increasing), with the hyper-parameters (a module and a function as "
           "references) and the status 'success'",
           "log the values log_metrics gets at the step it gets, once; log_hyperparams' plain "
           "data as given; end the run in finalize(status); make read_run() read the run with "
           "the tracker's own client"),
    ("logger.resume", "logger",
           "a fit resumed from a checkpoint with a new logger instance continues the same run "
           "(same version) and the tracker holds every step once",
           "return the run's id from state_dict() and continue that run after "
           "load_state_dict()"),
    ("logger.failed_status", "logger",
           "a fit whose training_step raises ends the run with the status 'failed' (when the "
           "tracker keeps a status)",
           "map finalize('failed') to the tracker's failed state"),
]
