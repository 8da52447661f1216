"""Strategy plugins for fulmen. Classes load on first access, so listing plugins stays cheap."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "SingleDeviceStrategy": "fulmen_strategies.single_device.strategy",
    "ParallelStrategy": "fulmen_strategies.parallel",
    "DDPStrategy": "fulmen_strategies.ddp.strategy",
    "FSDPStrategy": "fulmen_strategies.fsdp.strategy",
    "DataParallelStrategy": "fulmen_strategies.dp.strategy",
    "DDP2Strategy": "fulmen_strategies.ddp2.strategy",
    "ModelParallelStrategy": "fulmen_strategies.model_parallel.strategy",
    "check_tp_plan": "fulmen_strategies.model_parallel.plans",
    "parallelize_module": "fulmen_strategies.model_parallel.plans",
}
__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
