"""Which fulmen object answers each Lightning name.

Lightning ships one tree under three roots: ``lightning`` (``lightning.pytorch``,
``lightning.fabric``), ``pytorch_lightning`` (= ``lightning.pytorch``) and ``lightning_fabric``
(= ``lightning.fabric``). :func:`canonical` folds the last two into the first, and
:data:`MODULES` says, per canonical module, where its names come from, first match first:

- ``names``: a Lightning name served by a given fulmen name (``"LightningModule":
  "fulmen.module:Module"``), where the module's name means something else than elsewhere;
- ``sources``: fulmen modules whose public names are served as they are;
- ``shared``: Lightning's public names of the module (:data:`fulmen.dropin.lightning_api.PUBLIC`),
  each served by the fulmen object :data:`SHARED` gives that name everywhere;

Lightning's private names that libraries import (``_AcceleratorConnector``, ``_lazy_load``...)
are added to their module's ``names`` from :data:`fulmen.dropin.private_api.PRIVATE`; any other
private name, and any module not listed (private or not), is an ``ImportError`` naming it:
nothing is made up for an unknown path.

Every public module of Lightning 2.6.6 under ``lightning.pytorch`` and ``lightning.fabric`` is
listed, with every public name it exports (tests/core/dropin/test_public_names.py walks an
installed Lightning to check). A module or name that is not here has no fulmen counterpart:
importing it is an error that names it (:mod:`fulmen.errors`). This module imports nothing but
the standard library, so ``fulmen run`` installs the hook without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import ModuleType

from fulmen.dropin.lightning_api import PUBLIC
from fulmen.dropin.private_api import PRIVATE, PRIVATE_MODULES

ROOTS = ("lightning", "pytorch_lightning", "lightning_fabric")
#: The Lightning release whose behaviour fulmen follows; what ``lightning.__version__`` and the
#: distributions ``lightning``, ``pytorch-lightning`` and ``lightning-fabric`` report.
LIGHTNING_VERSION = "2.6.6"


@dataclass(frozen=True)
class ModuleMap:
    """Where one Lightning module's names come from (see the module docstring)."""

    sources: tuple[str, ...] = ()
    names: dict[str, str] = field(default_factory=dict)
    shared: frozenset[str] = frozenset()


def _in(module: str, names: str) -> dict[str, str]:
    """``{name: "module:name"}`` for the space-separated ``names``."""
    return {n: f"{module}:{n}" for n in names.split()}


_ROOT_ZERO = ("rank_prefixed_message rank_zero_debug rank_zero_deprecation rank_zero_info "
              "rank_zero_only rank_zero_warn WarningCache")
_UNAVAILABLE = ("BitsandbytesPrecision LitLogger NeptuneLogger ServableModuleValidator "
                "SingleDeviceXLAStrategy SingleTPUStrategy TPUAccelerator "
                "TransformerEnginePrecision XLAAccelerator XLACheckpointIO XLAEnvironment "
                "XLAFSDPStrategy XLAPrecision XLAProfiler XLAStrategy")
_GRAVEYARD = ("BitsandbytesPrecisionPlugin DeepSpeedPrecisionPlugin DoublePrecisionPlugin "
              "FSDPMixedPrecisionPlugin FSDPPrecisionPlugin HalfPrecisionPlugin "
              "LightningDoublePrecisionModule MixedPrecisionPlugin PrecisionPlugin "
              "TransformerEnginePrecisionPlugin XLAPrecisionPlugin")

#: Lightning's public name -> the fulmen object serving it, wherever a Lightning module has it
#: (``"module:attribute"``). One Lightning name means one thing across Lightning's modules,
#: with the few exceptions each module's ``names`` gives.
SHARED: dict[str, str] = {
    # ------------------------------------------------------------ lightning_utilities' names
    **_in("fulmen.utilities.rank_zero", _ROOT_ZERO),
    "utils_rank_zero_only": "fulmen.utilities.rank_zero:rank_zero_only",
    "warning_cache": "fulmen.dropin.extras:warning_cache",
    "apply_to_collection": "fulmen.utilities.apply_func:apply_to_collection",
    "move_data_to_device": "fulmen.utilities.apply_func:move_data_to_device",
    "is_dataclass_instance": "lightning_utilities.core.apply_func:is_dataclass_instance",
    "LightningEnum": "fulmen.utilities.enums:LightningEnum",
    **_in("lightning_utilities.core.imports",
          "RequirementCache compare_version module_available package_available"),
    "get_all_subclasses": "lightning_utilities.core.inheritance:get_all_subclasses",
    "is_overridden": "fulmen.utilities.model_helpers:is_overridden",
    # ------------------------------------------------------------ core, trainer, tuner
    "LightningModule": "fulmen.module:Module",
    "LightningDataModule": "fulmen.datamodule:DataModule",
    "Trainer": "fulmen.trainer:Trainer",
    "Tuner": "fulmen.tuner:Tuner",
    "Fabric": "fulmen.lite:Fabric",
    "is_wrapped": "fulmen.lite_wrappers:is_wrapped",
    **_in("fulmen.dropin.hooks", "CheckpointHooks DataHooks ModelHooks"),
    "HyperparametersMixin": "fulmen.utilities.hparams_mixin:HyperparametersMixin",
    "LightningOptimizer": "fulmen.trainer.optim:OptimizerWrapper",
    "LRSchedulerConfig": "fulmen.trainer.optim:LRSchedulerConfig",
    **_in("fulmen.trainer.states", "RunningStage TrainerFn TrainerState TrainerStatus"),
    **_in("fulmen.dropin.loops", "AbstractClosure Closure ClosureResult ManualResult "
          "OutputResult T check_finite_loss do_nothing_closure"),
    "RestartStage": "fulmen.dropin.loops:FitRestartStage",
    # ------------------------------------------------------------ callbacks
    **_in("fulmen.callbacks", "BackboneFinetuning BaseFinetuning BasePredictionWriter "
          "BatchSizeFinder Callback DeviceStatsMonitor EarlyStopping EarlyStoppingReason "
          "GradientAccumulationScheduler LambdaCallback LearningRateFinder "
          "LearningRateMonitor ModelCheckpoint ModelSummary OnExceptionCheckpoint ProgressBar "
          "RichModelSummary RichProgressBar RichProgressBarTheme StochasticWeightAveraging "
          "TQDMProgressBar ThroughputMonitor Timer"),
    "Checkpoint": "fulmen.callbacks.checkpoint_base:Checkpoint",
    "WriteInterval": "fulmen.callbacks.prediction_writer:WriteInterval",
    "Interval": "fulmen.utilities.enums:Interval",
    "multiplicative": "fulmen.callbacks.finetuning:multiplicative",
    **_in("fulmen.callbacks.progress", "convert_inf get_standard_metrics"),
    "Tqdm": "fulmen.callbacks.tqdm_progress:Tqdm",
    **_in("fulmen.callbacks.rich_columns", "BatchesProcessedColumn CustomBarColumn "
          "CustomInfiniteTask CustomProgress CustomTimeColumn MetricsTextColumn "
          "ProcessingSpeedColumn"),
    "ModelPruning": "fulmen.callbacks.pruning:ModelPruning",
    "SpikeDetection": "fulmen.callbacks.spike:SpikeDetection",
    "FabricSpikeDetection": "fulmen.utilities.spike:SpikeDetection",
    "TrainingSpikeException": "fulmen.utilities.spike:TrainingSpikeException",
    **_in("fulmen.callbacks.weight_averaging", "EMAWeightAveraging WeightAveraging"),
    # ------------------------------------------------------------ loggers
    **_in("fulmen.loggers", "CSVLogger CometLogger MLFlowLogger TensorBoardLogger WandbLogger"),
    **_in("fulmen.loggers.fabric", "FabricCSVLogger FabricTensorBoardLogger"),
    "Logger": "fulmen.api:Logger",
    "FabricLogger": "fulmen.api:Logger",
    "rank_zero_experiment": "fulmen.api.logger:rank_zero_experiment",
    **_in("fulmen.loggers.dummy", "DummyExperiment DummyLogger merge_dicts"),
    "ExperimentWriter": "fulmen.loggers.experiment_writer:ExperimentWriter",
    # ------------------------------------------------------------ profilers
    **_in("fulmen.profilers", "AdvancedProfiler PassThroughProfiler Profiler PyTorchProfiler "
          "SimpleProfiler"),
    **_in("fulmen.profilers.record_functions", "RegisterRecordFunction ScheduleWrapper"),
    # ------------------------------------------------------------ accelerators
    "Accelerator": "fulmen.api:Accelerator",
    **_in("fulmen_accelerators", "CPUAccelerator CUDAAccelerator MPSAccelerator"),
    **_in("fulmen.utilities.device_query", "find_usable_cuda_devices get_nvidia_gpu_stats "
          "is_cuda_available num_cuda_devices"),
    "get_device_stats": "fulmen.utilities.device_query:get_mps_stats",
    "get_cpu_stats": "fulmen.utilities.device_stats:get_cpu_stats",
    "FabricXLAAccelerator": "fulmen.dropin.unavailable:XLAAccelerator",
    **_in("fulmen.dropin.registries", "ACCELERATOR_REGISTRY STRATEGY_REGISTRY "
          "call_register_accelerators"),
    "AcceleratorRegistry": "fulmen.dropin.registries:ACCELERATOR_REGISTRY",
    "StrategyRegistry": "fulmen.dropin.registries:STRATEGY_REGISTRY",
    # ------------------------------------------------------------ strategies
    "Strategy": "fulmen.api:Strategy",
    **_in("fulmen_strategies", "DDPStrategy DataParallelStrategy FSDPStrategy "
          "ModelParallelStrategy ParallelStrategy SingleDeviceStrategy"),
    "DeepSpeedStrategy": "fulmen_deepspeed:DeepSpeedStrategy",
    **_in("fulmen.dropin.extras", "ModuleType TBroadcast TModel TReduce T_destination "
          "DistributedDataParallel"),
    "remove_module_hooks": "fulmen.utilities.module_hooks:remove_module_hooks",
    **_in("fulmen.dropin.unavailable", _UNAVAILABLE),
    # ------------------------------------------------------------ plugins
    "Precision": "fulmen.api:Precision",
    "FabricPrecision": "fulmen.api:Precision",
    "MixedPrecision": "fulmen_precision:MixedPrecision",
    "HalfPrecision": "fulmen_precision:HalfPrecision",
    "DoublePrecision": "fulmen_precision:Precision64",
    **_in("fulmen.dropin.precision_names", "DeepSpeedPrecision FSDPPrecision"),
    "FabricBNBPrecision": "fulmen.dropin.unavailable:BitsandbytesPrecision",
    "FabricTEPrecision": "fulmen.dropin.unavailable:TransformerEnginePrecision",
    **_in("fulmen.dropin.graveyard", _GRAVEYARD),
    **_in("fulmen.api", "AsyncCheckpointIO CheckpointIO ClusterEnvironment TorchCheckpointIO"),
    **_in("fulmen_environments", "KubeflowEnvironment LSFEnvironment MPIEnvironment "
          "SLURMEnvironment TorchElasticEnvironment"),
    "LightningEnvironment": "fulmen_environments:LocalEnvironment",
    "find_free_network_port": "fulmen_environments.local.environment:find_free_port",
    **_in("fulmen.utilities.layer_sync", "LayerSync TorchSyncBatchNorm"),
    **_in("fulmen.utilities.collectives", "Collective SingleDeviceCollective TorchCollective"),
    # ------------------------------------------------------------ cli
    "LightningCLI": "fulmen.cli:FulmenCLI",
    **_in("fulmen.cli.stages", "LightningArgumentParser ReduceLROnPlateau SaveConfigCallback"),
    **_in("fulmen.cli.instantiate", "instantiate_class instantiate_module"),
    # ------------------------------------------------------------ demos
    **_in("fulmen.demos.boring_classes", "BoringDataModule BoringDataModuleNoLen BoringModel "
          "DemoModel IterableBoringDataModule ManualOptimBoringModel Net RandomDataset "
          "RandomDictDataset RandomIterableDataset RandomIterableDatasetWithLen"),
    **_in("fulmen.demos.transformer", "Dictionary LightningTransformer PositionalEncoding "
          "Transformer WikiText2 tokenize"),
    **_in("fulmen.demos.lstm", "LightningLSTM SequenceSampler SimpleLSTM"),
    **_in("fulmen.demos.mnist_datamodule", "MNIST MNISTDataModule"),
    # ------------------------------------------------------------ serve
    "ServableModule": "fulmen.serve:ServableModule",
    # ------------------------------------------------------------ utilities
    "MisconfigurationException": "fulmen.errors:ConfigurationError",
    "LightningDeprecationWarning": "fulmen.errors:FulmenDeprecationWarning",
    **_in("fulmen.utilities.warnings", "PossibleUserWarning disable_possible_user_warnings"),
    "SIGTERMException": "fulmen.utilities.exceptions:SIGTERMException",
    **_in("fulmen.seed", "isolate_rng pl_worker_init_function reset_seed seed_everything"),
    "AttributeDict": "fulmen.hparams:AttributeDict",
    **_in("fulmen.utilities.parsing", "clean_namespace collect_init_args get_init_args "
          "is_picklable lightning_getattr lightning_hasattr lightning_setattr "
          "parse_class_init_keys"),
    "save_hyperparameters": "fulmen.utilities.hparams_mixin:save_hyperparameters",
    **_in("fulmen.utilities.saving", "convert load_hparams_from_tags_csv load_hparams_from_yaml "
          "save_hparams_to_tags_csv save_hparams_to_yaml update_hparams"),
    **_in("fulmen.utilities.cloud_io", "get_filesystem pl_load"),
    **_in("fulmen.utilities.data", "extract_batch_size has_iterable_dataset has_len "
          "has_len_all_ranks sized_len suggested_max_num_workers"),
    **_in("fulmen.utilities.conversions", "convert_tensors_to_scalars convert_to_tensors"),
    **_in("fulmen.utilities.distributed", "is_shared_filesystem prepare_for_backward"),
    "DistributedSamplerWrapper": "fulmen_strategies.samplers:DistributedSamplerWrapper",
    **_in("fulmen.utilities.unrepeated_sampler",
          "UnrepeatedDistributedSampler UnrepeatedDistributedSamplerWrapper"),
    **_in("fulmen.utilities.memory", "garbage_collection_cuda is_cuda_out_of_memory "
          "is_cudnn_snafu is_oom_error is_out_of_cpu_memory recursive_detach"),
    "is_param_in_hook_signature":
        "fulmen.utilities.signature_utils:is_param_in_hook_signature",
    **_in("fulmen.utilities.parameter_tying", "find_shared_parameters set_shared_parameters"),
    "grad_norm": "fulmen.utilities.grads:grad_norm",
    "GradClipAlgorithmType": "fulmen.utilities.enums:GradClipAlgorithmType",
    "CombinedLoader": "fulmen.utilities.combined_loader:CombinedLoader",
    **_in("fulmen.utilities.compile", "from_compiled to_uncompiled"),
    **_in("fulmen.utilities.migration", "migrate_checkpoint pl_legacy_patch"),
    **_in("fulmen.utilities.model_registry",
          "download_model_from_registry find_model_local_ckpt_path"),
    "get_torchvision_model": "fulmen.utilities.vision:get_torchvision_model",
    **_in("fulmen.dropin.deepspeed_utils",
          "convert_zero_checkpoint_to_fp32_state_dict ds_checkpoint_dir"),
    **_in("fulmen.utilities.model_summary", "LayerSummary get_formatted_model_size "
          "get_human_readable_count parse_batch_shape summarize"),
    "Summary": "fulmen.utilities.model_summary:ModelSummary",
    **_in("fulmen.utilities.model_summary_deepspeed",
          "DeepSpeedLayerSummary DeepSpeedSummary deepspeed_param_size"),
    **_in("fulmen.utilities.types", "CollectibleGroup LRSchedulerConfigType Optimizable "
          "OptimizerConfig OptimizerLRSchedulerConfig Steppable"),
    **_in("fulmen.utilities.throughput", "Throughput get_available_flops measure_flops"),
    "fabric_plugin_to_compute_dtype": "fulmen.utilities.throughput:compute_dtype",
}

_CORE = {"LightningModule": "fulmen.module:Module",
         "LightningDataModule": "fulmen.datamodule:DataModule"}
_TOP = {**_CORE, "Trainer": "fulmen.trainer:Trainer", "Callback": "fulmen.callbacks.base:Callback",
        "seed_everything": "fulmen.seed:seed_everything"}
_FABRIC = {"Fabric": "fulmen.lite:Fabric", "seed_everything": "fulmen.seed:seed_everything"}
_PRECISION = {"Precision": "fulmen.api:Precision",
              "DoublePrecision": "fulmen_precision:Precision64",
              "MixedPrecision": "fulmen_precision:MixedPrecision",
              "HalfPrecision": "fulmen_precision:HalfPrecision"}
_IO = _in("fulmen.api", "CheckpointIO AsyncCheckpointIO TorchCheckpointIO")
_ENVIRONMENTS = {"ClusterEnvironment": "fulmen.api:ClusterEnvironment"}
_UTILITIES = {"is_overridden": "fulmen.utilities.model_helpers:is_overridden",
              "MisconfigurationException": "fulmen.errors:ConfigurationError"}
_TYPES = ("fulmen.utilities.types",)
_FABRIC_LOGGERS = {"CSVLogger": "fulmen.loggers.fabric:FabricCSVLogger",
                   "TensorBoardLogger": "fulmen.loggers.fabric:FabricTensorBoardLogger"}
#: Fabric's modules use lightning_utilities' ``is_overridden`` (any parent class)
_LU_OVERRIDDEN = {"is_overridden": "lightning_utilities.core.overrides:is_overridden"}

#: the registries (instances, so not in Lightning's public-name walk) of Lightning's
#: ``accelerators`` and ``strategies`` packages
_REGISTRY_NAMES = {n: SHARED[n] for n in ("AcceleratorRegistry", "StrategyRegistry",
                                          "ACCELERATOR_REGISTRY", "STRATEGY_REGISTRY",
                                          "call_register_accelerators")}

#: The modules whose names are not all :data:`SHARED`'s (or that Lightning 2.6.6 no longer has
#: but old scripts import); every other module of :data:`PUBLIC` is served from it.
_EXPLICIT: dict[str, ModuleMap] = {
    "lightning": ModuleMap(names={**_TOP, "Fabric": "fulmen.lite:Fabric"}),
    # ------------------------------------------------------------------ lightning.pytorch
    "lightning.pytorch": ModuleMap(
        names={**_TOP, "cli_lightning_logo": "fulmen.dropin.extras:cli_lightning_logo"}),
    "lightning.pytorch.core": ModuleMap(names=_CORE),
    "lightning.pytorch.trainer": ModuleMap(names={"Trainer": "fulmen.trainer:Trainer"}),
    "lightning.pytorch.trainer.states": ModuleMap(("fulmen.trainer.states",)),
    "lightning.pytorch.callbacks": ModuleMap(("fulmen.callbacks",)),
    "lightning.pytorch.loggers": ModuleMap(
        ("fulmen.loggers",), {"LightningLoggerBase": "fulmen.loggers:Logger"}),  # 1.x name
    "lightning.pytorch.profilers": ModuleMap(("fulmen.profilers",)),
    "lightning.pytorch.tuner": ModuleMap(("fulmen.tuner",)),
    # Lightning 1.x homes of names that moved
    "lightning.pytorch.core.lightning": ModuleMap(names=_CORE),
    "lightning.pytorch.callbacks.base": ModuleMap(
        names={"Callback": "fulmen.callbacks.base:Callback"}),
    "lightning.pytorch.loggers.base": ModuleMap(
        ("fulmen.loggers",), {"LightningLoggerBase": "fulmen.loggers:Logger"}),
    "lightning.pytorch.utilities.cli": ModuleMap(
        names={"LightningCLI": "fulmen.cli:FulmenCLI",
               "SaveConfigCallback": "fulmen.cli:SaveConfigCallback"}),
    "lightning.pytorch.lite": ModuleMap(names={"LightningLite": "fulmen.lite:Lite"}),
    "lightning.pytorch.strategies": ModuleMap(("fulmen_strategies",), _REGISTRY_NAMES),
    "lightning.pytorch.accelerators": ModuleMap(("fulmen_accelerators",), _REGISTRY_NAMES),
    "lightning.pytorch.plugins": ModuleMap(("fulmen_environments",),
                                           {**_PRECISION, **_IO, **_ENVIRONMENTS}),
    "lightning.pytorch.plugins.precision": ModuleMap(names=_PRECISION),
    "lightning.pytorch.plugins.environments": ModuleMap(("fulmen_environments",), _ENVIRONMENTS),
    "lightning.pytorch.plugins.io": ModuleMap(names=_IO),
    "lightning.pytorch.utilities": ModuleMap(("fulmen.utilities",), _UTILITIES),
    "lightning.pytorch.utilities.rank_zero": ModuleMap(("fulmen.utilities.rank_zero",)),
    "lightning.pytorch.utilities.types": ModuleMap(_TYPES),
    "lightning.pytorch.utilities.imports": ModuleMap(("fulmen.dropin.extras",)),
    "lightning.pytorch.utilities.model_summary": ModuleMap(("fulmen.utilities.model_summary",)),
    "lightning.pytorch.utilities.model_summary.model_summary": ModuleMap(
        ("fulmen.utilities.model_summary",)),
    "lightning.pytorch.utilities.apply_func": ModuleMap(("fulmen.utilities.apply_func",)),
    "lightning.pytorch.utilities.upgrade_checkpoint": ModuleMap(
        names={"main": "fulmen.utilities.upgrade_checkpoint:main"}),
    "lightning.pytorch.demos": ModuleMap(("fulmen.demos",)),
    "lightning.pytorch.demos.boring_classes": ModuleMap(("fulmen.demos.boring_classes",)),
    "lightning.pytorch.demos.transformer": ModuleMap(("fulmen.demos.transformer",)),
    "lightning.pytorch.demos.lstm": ModuleMap(("fulmen.demos.lstm",)),
    "lightning.pytorch.demos.mnist_datamodule": ModuleMap(("fulmen.demos.mnist_datamodule",)),
    "lightning.pytorch.loops.fit_loop": ModuleMap(
        names={"RestartStage": "fulmen.dropin.loops:FitRestartStage"}),
    "lightning.pytorch.loops.training_epoch_loop": ModuleMap(
        names={"RestartStage": "fulmen.dropin.loops:EpochRestartStage"}),
    "lightning.pytorch.loops.evaluation_loop": ModuleMap(
        names={"RestartStage": "fulmen.dropin.loops:EvaluationRestartStage"}),
    # ------------------------------------------------------------------ lightning.fabric
    "lightning.fabric": ModuleMap(names=_FABRIC),
    "lightning.fabric.fabric": ModuleMap(names={**_FABRIC, **_LU_OVERRIDDEN}),
    "lightning.fabric.wrappers": ModuleMap(names=_LU_OVERRIDDEN),
    "lightning.fabric.utilities.registry": ModuleMap(names=_LU_OVERRIDDEN),
    "lightning.fabric.cli": ModuleMap(names={"main": "fulmen.dropin.fabric_cli:main"}),
    "lightning.fabric.utilities": ModuleMap(("fulmen.utilities",)),
    "lightning.fabric.utilities.rank_zero": ModuleMap(("fulmen.utilities.rank_zero",)),
    "lightning.fabric.utilities.types": ModuleMap(_TYPES),
    "lightning.fabric.utilities.apply_func": ModuleMap(("fulmen.utilities.apply_func",)),
    "lightning.fabric.utilities.throughput": ModuleMap(("fulmen.utilities.throughput",)),
    "lightning.fabric.utilities.spike": ModuleMap(
        names={"SpikeDetection": "fulmen.utilities.spike:SpikeDetection"}),
    "lightning.fabric.strategies": ModuleMap(("fulmen_strategies",), _REGISTRY_NAMES),
    "lightning.fabric.accelerators": ModuleMap(("fulmen_accelerators",), _REGISTRY_NAMES),
    "lightning.fabric.plugins": ModuleMap(("fulmen_environments",),
                                          {**_PRECISION, **_IO, **_ENVIRONMENTS}),
    "lightning.fabric.plugins.precision": ModuleMap(names=_PRECISION),
    "lightning.fabric.plugins.environments": ModuleMap(("fulmen_environments",), _ENVIRONMENTS),
    "lightning.fabric.plugins.io": ModuleMap(names=_IO),
    # Fabric's loggers take root_dir (fulmen.loggers.fabric)
    "lightning.fabric.loggers": ModuleMap(names=_FABRIC_LOGGERS),
    "lightning.fabric.loggers.csv_logs": ModuleMap(names=_FABRIC_LOGGERS),
    "lightning.fabric.loggers.tensorboard": ModuleMap(names=_FABRIC_LOGGERS),
}


def _modules() -> dict[str, ModuleMap]:
    out = dict(_EXPLICIT)
    for module, public in PUBLIC.items():
        out[module] = replace(out.get(module, ModuleMap()), shared=frozenset(public.split()))
    for module in PRIVATE_MODULES:
        out.setdefault(module, ModuleMap())
    for module, private in PRIVATE.items():
        found = out.get(module, ModuleMap())
        out[module] = replace(found, names={**found.names, **private})
    return out


#: Every Lightning module fulmen serves -> where its names come from
MODULES: dict[str, ModuleMap] = _modules()


def canonical(fullname: str) -> str | None:
    """``fullname`` under the ``lightning`` root, or None when it is not a Lightning name."""
    root, _, rest = fullname.partition(".")
    if root not in ROOTS:
        return None
    prefix = {"lightning": "lightning", "pytorch_lightning": "lightning.pytorch",
              "lightning_fabric": "lightning.fabric"}[root]
    return f"{prefix}.{rest}" if rest else prefix


def lookup(fullname: str) -> ModuleMap | None:
    """The map for Lightning module ``fullname`` (any root), or None: no fulmen counterpart."""
    name = canonical(fullname)
    if name is None:
        return None
    return MODULES.get(name)


def counterparts(fullname: str) -> list[str]:
    """The Lightning modules next to ``fullname`` that do have a fulmen counterpart (for errors)."""
    name = canonical(fullname) or fullname
    parent = name.rpartition(".")[0] if "." in name else name
    root = fullname.partition(".")[0]
    here = sorted(m for m in MODULES if m.rpartition(".")[0] == parent)
    if root != "lightning":  # show them under the root the script used
        prefix = {"pytorch_lightning": "lightning.pytorch",
                  "lightning_fabric": "lightning.fabric"}[root]
        here = [root + m[len(prefix):] for m in here if m.startswith(prefix)]
    return here


def exports(module: ModuleType) -> list[str]:
    """The names a source module serves: its ``__all__``, else the public functions and classes
    it defines itself (not what it imported)."""
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return list(declared)
    return [name for name, value in vars(module).items() if not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__]
