"""Benchmark: what pydantic would cost for validating Trainer/Lite arguments, against the plain
checks in ``fulmen.arguments`` that validate them today.

Each fresh interpreter imports torch, then times these phases one after the other (wall clock
and CPU time of the process); the script prints the median of each over ``REPEATS`` interpreters:

1. ``Trainer ready`` today: ``import fulmen`` + ``Trainer(accelerator="cpu")`` (plain checks)
2. ``import pydantic_core`` (pydantic's compiled validator)
3. a ``pydantic_core.SchemaValidator`` over a core schema of the Trainer's arguments, built and
   used once (pydantic's engine without pydantic's Python layer)
4. ``import pydantic`` (``pydantic.BaseModel`` touched: pydantic imports lazily), on top of 2
5. ``pydantic.create_model`` of the Trainer's arguments: every parameter of ``Trainer.__init__``,
   the checked ones with the constraints ``fulmen.arguments`` enforces (``defer_build=True``
   only moves this cost to the first validation)
6. the model's first ``model_validate`` of the Trainer's defaults

Budget (issue 15): "Trainer ready" within 100 ms of ``import torch``. Prints; asserts nothing.
Wall-clock figures from a machine shared with other jobs mean little; CPU time less so.

    .venv/bin/python tests/benchmarks/config_validation.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

REPEATS = 5

CODE = r'''
import inspect, json, time
import torch

marks = [("start", time.perf_counter(), time.process_time())]
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time()))

import fulmen
fulmen.Trainer(accelerator="cpu", logger=False)
mark("Trainer ready (plain checks)")

import pydantic_core
mark("import pydantic_core")

PARAMS = {n: p.default for n, p in inspect.signature(fulmen.Trainer.__init__).parameters.items()
          if n != "self"}
CS = pydantic_core.core_schema
count = CS.int_schema(strict=True, ge=1)
limit = CS.int_schema(strict=True, ge=-1)
number = CS.union_schema([CS.int_schema(strict=True), CS.float_schema(strict=True,
                                                                      allow_inf_nan=False)])
flag = CS.bool_schema(strict=True)
checked = {"num_nodes": count, "max_steps": limit, "accumulate_grad_batches": count,
           "log_every_n_steps": count, "num_sanity_val_steps": limit,
           "max_epochs": CS.nullable_schema(limit), "check_val_every_n_epoch":
           CS.nullable_schema(count), "gradient_clip_val": CS.nullable_schema(number),
           "val_check_interval": CS.nullable_schema(number),
           "gradient_clip_algorithm": CS.nullable_schema(CS.literal_schema(["norm", "value"])),
           "deterministic": CS.nullable_schema(CS.union_schema([flag,
                                                                CS.literal_schema(["warn"])])),
           "benchmark": CS.nullable_schema(flag)}
checked.update({n: flag for n in ("detect_anomaly", "enable_checkpointing",
                                  "enable_progress_bar", "enable_model_summary",
                                  "use_distributed_sampler", "sync_batchnorm", "inference_mode")})
schema = CS.typed_dict_schema(
    {n: CS.typed_dict_field(checked.get(n, CS.any_schema()), required=False) for n in PARAMS},
    extra_behavior="forbid")
pydantic_core.SchemaValidator(schema).validate_python(dict(PARAMS))
mark("pydantic_core validator: build + validate")

import pydantic
pydantic.BaseModel
mark("import pydantic (beyond pydantic_core)")

from typing import Annotated, Any, Literal, Optional, Union
from pydantic import Field, StrictBool, StrictFloat, StrictInt
Count = Annotated[StrictInt, Field(ge=1)]
Limit = Annotated[StrictInt, Field(ge=-1)]
Number = Union[StrictInt, Annotated[StrictFloat, Field(allow_inf_nan=False)]]
CHECKED = {
    "num_nodes": Count, "max_epochs": Optional[Limit], "max_steps": Limit,
    "accumulate_grad_batches": Count, "log_every_n_steps": Count, "num_sanity_val_steps": Limit,
    "check_val_every_n_epoch": Optional[Count], "gradient_clip_val": Optional[Number],
    "gradient_clip_algorithm": Optional[Literal["norm", "value"]],
    "val_check_interval": Optional[Number],
    "deterministic": Optional[Union[StrictBool, Literal["warn"]]],
    "benchmark": Optional[StrictBool],
}
CHECKED.update({n: StrictBool for n in ("detect_anomaly", "enable_checkpointing",
                                        "enable_progress_bar", "enable_model_summary",
                                        "use_distributed_sampler", "sync_batchnorm",
                                        "inference_mode")})
Args = pydantic.create_model(
    "TrainerArguments", __config__=pydantic.ConfigDict(arbitrary_types_allowed=True,
                                                       extra="forbid"),
    **{n: (CHECKED.get(n, Any), d) for n, d in PARAMS.items()})
mark("pydantic model: build")

Args.model_validate(dict(PARAMS))
mark("pydantic model: first validation")

print(json.dumps([(name, (w - pw) * 1e3, (c - pc) * 1e3) for (name, w, c), (_, pw, pc)
                  in zip(marks[1:], marks)]))
'''


def main() -> None:
    import pydantic

    runs = []
    for _ in range(REPEATS):
        out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                             check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    print(f"pydantic {pydantic.VERSION}; median of {REPEATS} fresh interpreters, each after "
          "`import torch`; ms wall / ms CPU")
    for i, (name, _, _) in enumerate(runs[0]):
        wall = statistics.median(run[i][1] for run in runs)
        cpu = statistics.median(run[i][2] for run in runs)
        print(f"  {name:44} {wall:8.1f} / {cpu:7.1f}")
    pydantic_total = [sum(r[2] for r in run[1:2] + run[3:]) for run in runs]
    core_total = [sum(r[2] for r in run[1:3]) for run in runs]
    for label, totals in (("added by pydantic (rows 2, 4, 5, 6), CPU", pydantic_total),
                          ("added by pydantic_core alone (rows 2, 3), CPU", core_total)):
        print(f"  {label:44} {statistics.median(totals):8.1f}")


if __name__ == "__main__":
    main()
