"""Which distribution and entry point provide the names users know, for error messages only.

When a name is not registered, fulmen looks it up here to say *why*: the providing plugin is
disabled, failed to load, or its distribution is not installed (with the ``pip install`` line).
This table never decides what gets selected; the installed plugins' records do.
"""

from __future__ import annotations

from typing import NamedTuple


class Provider(NamedTuple):
    distribution: str
    entry_point: str
    install: str = ""


def _provide(dist: str, entry_point: str, names: str, install: str = "") -> dict[str, Provider]:
    return {n: Provider(dist, entry_point, install or f"pip install {dist}") for n in names.split()}


KNOWN: dict[str, dict[str, Provider]] = {
    "accelerator": {
        **_provide("fulmen-accelerators", "cpu", "cpu"),
        **_provide("fulmen-accelerators", "cuda", "cuda gpu"),
        **_provide("fulmen-accelerators", "mps", "mps"),
    },
    "strategy": {
        **_provide("fulmen-strategies", "single_device", "single_device"),
        **_provide("fulmen-strategies", "ddp", "ddp ddp_spawn ddp_fork ddp_notebook "
                   "ddp_find_unused_parameters_true ddp_spawn_find_unused_parameters_true"),
        **_provide("fulmen-strategies", "dp", "dp"),
        **_provide("fulmen-strategies", "ddp2", "ddp2"),
        **_provide("fulmen-strategies", "fsdp", "fsdp"),
        **_provide("fulmen-deepspeed", "deepspeed", "deepspeed deepspeed_stage_1 deepspeed_stage_2 "
                   "deepspeed_stage_2_offload deepspeed_stage_3 deepspeed_stage_3_offload"),
        **_provide("fulmen-fairscale", "ddp_sharded", "ddp_sharded ddp_sharded_spawn"),
        **_provide("fulmen-fairscale", "pipe", "pipe"),
        **_provide("fulmen-horovod", "horovod", "horovod", "make install-horovod"),
    },
    "precision": {
        **_provide("fulmen-precision", "fp32", "32-true 32"),
        **_provide("fulmen-precision", "fp64", "64-true 64"),
        **_provide("fulmen-precision", "mixed", "16-mixed bf16-mixed 16 bf16"),
        **_provide("fulmen-precision", "half", "16-true bf16-true"),
    },
    "environment": {
        **{n: Provider("fulmen-environments", n, "pip install fulmen-environments")
           for n in ("local", "torchelastic", "slurm", "lsf", "kubeflow")},
        "mpi": Provider("fulmen-environments", "mpi", "pip install 'fulmen-environments[mpi]'"),
    },
}
