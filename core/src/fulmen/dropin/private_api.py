"""Lightning 2.6's private names that libraries built on Lightning import (litgpt, nequip,
scvi-tools, darts...), per Lightning module, and the fulmen object serving each
(``"module:attribute"``). A private name not listed here is an ``ImportError`` naming it, never
a stand-in. Also the private modules of Lightning that are served (:data:`PRIVATE_MODULES`).
Standard library only: data."""

from __future__ import annotations

_FLAGS = "fulmen.dropin.import_flags"
_PARSER = "fulmen.dropin.device_parser"
_UTIL = "fulmen.dropin.private_utilities"


def _flags(names: str) -> dict[str, str]:
    """``{"_NAME": "fulmen.dropin.import_flags:NAME"}`` for the space-separated ``names``."""
    return {f"_{n}": f"{_FLAGS}:{n}" for n in names.split()}


_FABRIC_IMPORTS = {"_IS_INTERACTIVE": "fulmen.dropin.connector:IS_INTERACTIVE", **_flags(
    "NUMPY_AVAILABLE IS_WINDOWS TORCH_GREATER_EQUAL_2_2 TORCH_GREATER_EQUAL_2_3 "
    "TORCH_EQUAL_2_4_0 TORCH_GREATER_EQUAL_2_4 TORCH_GREATER_EQUAL_2_4_1 "
    "TORCH_GREATER_EQUAL_2_5 TORCH_GREATER_EQUAL_2_6 TORCH_LESS_EQUAL_2_6 "
    "TORCHMETRICS_GREATER_EQUAL_1_0_0 PYTHON_GREATER_EQUAL_3_10_0")}
_PYTORCH_IMPORTS = _flags(
    "PYTHON_GREATER_EQUAL_3_11_0 TORCH_GREATER_EQUAL_2_6 TORCHMETRICS_GREATER_EQUAL_0_8_0 "
    "TORCHMETRICS_GREATER_EQUAL_0_9_1 TORCHMETRICS_GREATER_EQUAL_0_11 "
    "TORCHMETRICS_GREATER_EQUAL_1_0_0 TORCH_EQUAL_2_8 TORCH_EQUAL_2_9 TORCH_GREATER_EQUAL_2_8")
_DEVICE_PARSER = {f"_{n}": f"{_PARSER}:{n}" for n in (
    "check_data_type", "check_unique", "determine_root_gpu_device", "get_all_available_gpus",
    "normalize_parse_gpu_input_to_list", "normalize_parse_gpu_string_input", "parse_gpu_ids",
    "sanitize_gpu_ids", "select_auto_accelerator")}
_RUNIF = {"_runif_reasons": f"{_UTIL}:runif_reasons"}
_WRAPPERS = {"_FabricOptimizer": "fulmen.lite_wrappers:LiteOptimizer",
             "_FabricModule": "fulmen.lite_wrappers:LiteModule",
             "_FabricDataLoader": "fulmen.lite_wrappers:LiteDataLoader"}

#: Lightning module -> {private name: fulmen object}
PRIVATE: dict[str, dict[str, str]] = {
    "lightning.fabric.utilities.imports": _FABRIC_IMPORTS,
    "lightning.pytorch.utilities.imports": _PYTORCH_IMPORTS,
    "lightning.fabric.plugins.precision.bitsandbytes":
        {"_BITSANDBYTES_AVAILABLE": f"{_FLAGS}:BITSANDBYTES_AVAILABLE"},
    "lightning.pytorch.plugins.precision.bitsandbytes":
        {"_BITSANDBYTES_AVAILABLE": f"{_FLAGS}:BITSANDBYTES_AVAILABLE"},
    "lightning.fabric.utilities.device_parser": _DEVICE_PARSER,
    "lightning.fabric.utilities.distributed":
        {"_distributed_is_initialized": f"{_UTIL}:distributed_is_initialized"},
    "lightning.fabric.utilities.registry":
        {"_register_classes": f"{_UTIL}:register_classes",
         "_load_external_callbacks": f"{_UTIL}:load_external_callbacks"},
    "lightning.fabric.utilities.init":
        {"_materialize_meta_tensors": f"{_UTIL}:materialize_meta_tensors",
         "_materialize": f"{_UTIL}:materialize",
         "_has_meta_device_parameters_or_buffers":
             f"{_UTIL}:has_meta_device_parameters_or_buffers",
         "_EmptyInit": "fulmen.lite_wrappers:EmptyInit"},
    "lightning.fabric.utilities.load":
        {"_lazy_load": "fulmen.dropin.lazy_load:lazy_load",
         "_NotYetLoadedTensor": "fulmen.dropin.lazy_load:NotYetLoadedTensor",
         "_LazyLoadingUnpickler": "fulmen.dropin.lazy_load:LazyLoadingUnpickler",
         "_materialize_tensors": "fulmen.dropin.lazy_load:materialize_tensors"},
    "lightning.fabric.utilities.testing": _RUNIF,
    "lightning.fabric.utilities.testing._runif": _RUNIF,
    "lightning.pytorch.utilities.testing": _RUNIF,
    "lightning.pytorch.utilities.testing._runif": _RUNIF,
    "lightning.fabric.wrappers": _WRAPPERS,
    "lightning.fabric.fabric": _WRAPPERS,
    "lightning.pytorch.trainer.connectors.accelerator_connector":
        {"_AcceleratorConnector": "fulmen.dropin.connector:AcceleratorConnector",
         "_IS_INTERACTIVE": "fulmen.dropin.connector:IS_INTERACTIVE"},
    "lightning.pytorch.trainer.setup":
        {"_log_device_info": "fulmen.dropin.connector:log_device_info"},
    "lightning.pytorch.tuner.lr_finder": {"_LRFinder": "fulmen.tuner.lr_finder:LRFinder"},
}

#: Lightning's private modules that are served (their names are :data:`PRIVATE`'s)
PRIVATE_MODULES = ("lightning.fabric.utilities.testing._runif",
                   "lightning.pytorch.utilities.testing._runif")
