"""Helpers Lightning users find under ``lightning.pytorch.utilities``, under the same names.

Each name is imported on first use; ``import fulmen.utilities`` alone imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "rank_zero_only": "fulmen.utilities.rank_zero",
    "rank_zero_info": "fulmen.utilities.rank_zero",
    "rank_zero_warn": "fulmen.utilities.rank_zero",
    "rank_zero_debug": "fulmen.utilities.rank_zero",
    "rank_zero_deprecation": "fulmen.utilities.rank_zero",
    "rank_prefixed_message": "fulmen.utilities.rank_zero",
    "WarningCache": "fulmen.utilities.rank_zero",
    "seed_everything": "fulmen.seed",
    "reset_seed": "fulmen.seed",
    "isolate_rng": "fulmen.seed",
    "pl_worker_init_function": "fulmen.seed",
    "worker_init_fn": "fulmen.seed",
    "apply_to_collection": "fulmen.utilities.apply_func",
    "apply_to_collections": "fulmen.utilities.apply_func",
    "move_data_to_device": "fulmen.utilities.apply_func",
    "AttributeDict": "fulmen.hparams",
    "is_overridden": "fulmen.utilities.model_helpers",
    # monitoring
    "Throughput": "fulmen.utilities.throughput",
    "ThroughputMonitor": "fulmen.utilities.throughput",
    "measure_flops": "fulmen.utilities.throughput",
    "get_available_flops": "fulmen.utilities.throughput",
    # strategies that wrap the module
    "StepDispatcher": "fulmen.utilities.forward_redirection",
}
__all__ = [
    "AttributeDict",
    "StepDispatcher",
    "Throughput",
    "ThroughputMonitor",
    "WarningCache",
    "apply_to_collection",
    "apply_to_collections",
    "get_available_flops",
    "is_overridden",
    "isolate_rng",
    "measure_flops",
    "move_data_to_device",
    "pl_worker_init_function",
    "rank_prefixed_message",
    "rank_zero_debug",
    "rank_zero_deprecation",
    "rank_zero_info",
    "rank_zero_only",
    "rank_zero_warn",
    "reset_seed",
    "seed_everything",
    "worker_init_fn",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from fulmen.hparams import AttributeDict
    from fulmen.seed import (
        isolate_rng,
        pl_worker_init_function,
        reset_seed,
        seed_everything,
        worker_init_fn,
    )
    from fulmen.utilities.apply_func import (
        apply_to_collection,
        apply_to_collections,
        move_data_to_device,
    )
    from fulmen.utilities.forward_redirection import StepDispatcher
    from fulmen.utilities.model_helpers import is_overridden
    from fulmen.utilities.rank_zero import (
        WarningCache,
        rank_prefixed_message,
        rank_zero_debug,
        rank_zero_deprecation,
        rank_zero_info,
        rank_zero_only,
        rank_zero_warn,
    )
    from fulmen.utilities.throughput import (
        Throughput,
        ThroughputMonitor,
        get_available_flops,
        measure_flops,
    )
