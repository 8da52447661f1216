"""Fault tolerance shared by the Trainer and Lite: stop notices answered at a step boundary every
rank agrees on (:mod:`~fulmen.fault_tolerance.preemption`), and lost work as a number
(:mod:`~fulmen.fault_tolerance.lost_work`). Both read the run through one small view,
:class:`~fulmen.fault_tolerance.run.TrainingRun`, which the Trainer and Lite implement."""
