"""Lightning 2.6.6's public API, as ``fulmen run`` serves it: every public module under
``lightning.pytorch`` and ``lightning.fabric`` (no path component starting with ``_``) and the
public names it exports (see tests/core/dropin/test_public_names.py for the rule). Each name is
served by the fulmen object :data:`fulmen.dropin.names.SHARED` gives it, unless the module's
entry in :data:`fulmen.dropin.names.MODULES` says otherwise. Standard library only: data."""

from __future__ import annotations

#: Lightning module -> its public names, space-separated
PUBLIC: dict[str, str] = {
    "lightning.pytorch": "Callback LightningDataModule LightningModule Trainer seed_everything",
    "lightning.pytorch.accelerators":
        "Accelerator CPUAccelerator CUDAAccelerator MPSAccelerator XLAAccelerator "
        "find_usable_cuda_devices",
    "lightning.pytorch.accelerators.accelerator": "Accelerator",
    "lightning.pytorch.accelerators.cpu":
        "Accelerator CPUAccelerator MisconfigurationException RequirementCache get_cpu_stats",
    "lightning.pytorch.accelerators.cuda":
        "Accelerator CUDAAccelerator MisconfigurationException get_nvidia_gpu_stats "
        "num_cuda_devices",
    "lightning.pytorch.accelerators.mps":
        "Accelerator MPSAccelerator MisconfigurationException get_device_stats",
    "lightning.pytorch.accelerators.xla": "Accelerator FabricXLAAccelerator XLAAccelerator",
    "lightning.pytorch.callbacks":
        "BackboneFinetuning BaseFinetuning BasePredictionWriter BatchSizeFinder Callback "
        "Checkpoint DeviceStatsMonitor EMAWeightAveraging EarlyStopping "
        "GradientAccumulationScheduler LambdaCallback LearningRateFinder LearningRateMonitor "
        "ModelCheckpoint ModelPruning ModelSummary OnExceptionCheckpoint ProgressBar "
        "RichModelSummary RichProgressBar SpikeDetection StochasticWeightAveraging "
        "TQDMProgressBar ThroughputMonitor Timer WeightAveraging",
    "lightning.pytorch.callbacks.batch_size_finder":
        "BatchSizeFinder Callback MisconfigurationException lightning_hasattr rank_zero_warn",
    "lightning.pytorch.callbacks.callback": "Callback",
    "lightning.pytorch.callbacks.checkpoint": "Callback Checkpoint",
    "lightning.pytorch.callbacks.device_stats_monitor":
        "Callback DeviceStatsMonitor MisconfigurationException",
    "lightning.pytorch.callbacks.early_stopping":
        "Callback EarlyStopping EarlyStoppingReason MisconfigurationException "
        "rank_prefixed_message rank_zero_warn",
    "lightning.pytorch.callbacks.finetuning":
        "BackboneFinetuning BaseFinetuning Callback MisconfigurationException multiplicative "
        "rank_zero_warn",
    "lightning.pytorch.callbacks.gradient_accumulation_scheduler":
        "Callback GradientAccumulationScheduler MisconfigurationException is_overridden "
        "rank_zero_warn",
    "lightning.pytorch.callbacks.lambda_function": "Callback LambdaCallback",
    "lightning.pytorch.callbacks.lr_finder": "Callback LearningRateFinder isolate_rng",
    "lightning.pytorch.callbacks.lr_monitor":
        "Callback LRSchedulerConfig LearningRateMonitor MisconfigurationException "
        "rank_zero_warn",
    "lightning.pytorch.callbacks.model_checkpoint":
        "Checkpoint MisconfigurationException ModelCheckpoint WarningCache get_filesystem "
        "rank_zero_info rank_zero_warn warning_cache",
    "lightning.pytorch.callbacks.model_summary":
        "Callback DeepSpeedSummary ModelSummary Summary summarize",
    "lightning.pytorch.callbacks.on_exception_checkpoint": "Checkpoint OnExceptionCheckpoint",
    "lightning.pytorch.callbacks.prediction_writer":
        "BasePredictionWriter Callback LightningEnum MisconfigurationException WriteInterval "
        "is_param_in_hook_signature",
    "lightning.pytorch.callbacks.progress": "ProgressBar RichProgressBar TQDMProgressBar",
    "lightning.pytorch.callbacks.progress.progress_bar":
        "Callback ProgressBar get_standard_metrics rank_zero_warn",
    "lightning.pytorch.callbacks.progress.rich_progress":
        "BatchesProcessedColumn CustomBarColumn CustomInfiniteTask CustomProgress "
        "CustomTimeColumn MetricsTextColumn ProcessingSpeedColumn ProgressBar RichProgressBar "
        "RichProgressBarTheme apply_to_collection",
    "lightning.pytorch.callbacks.progress.tqdm_progress":
        "ProgressBar TQDMProgressBar Tqdm convert_inf rank_zero_debug",
    "lightning.pytorch.callbacks.pruning":
        "Callback LightningModule MisconfigurationException ModelPruning apply_to_collection "
        "rank_zero_debug rank_zero_only",
    "lightning.pytorch.callbacks.rich_model_summary":
        "ModelSummary RichModelSummary get_formatted_model_size get_human_readable_count",
    "lightning.pytorch.callbacks.spike": "Callback FabricSpikeDetection SpikeDetection",
    "lightning.pytorch.callbacks.stochastic_weight_avg":
        "Callback DeepSpeedStrategy FSDPStrategy LRSchedulerConfig MisconfigurationException "
        "StochasticWeightAveraging rank_zero_info rank_zero_warn",
    "lightning.pytorch.callbacks.throughput_monitor":
        "BitsandbytesPrecision Callback DeepSpeedPrecision DoublePrecision FSDPPrecision "
        "FabricPrecision HalfPrecision MixedPrecision Precision RunningStage Throughput "
        "ThroughputMonitor TrainerFn TransformerEnginePrecision XLAPrecision "
        "fabric_plugin_to_compute_dtype get_available_flops rank_zero_only rank_zero_warn",
    "lightning.pytorch.callbacks.timer":
        "Callback Interval LightningEnum MisconfigurationException RunningStage Timer "
        "rank_zero_info",
    "lightning.pytorch.callbacks.weight_averaging":
        "Callback EMAWeightAveraging WeightAveraging is_overridden rank_zero_info "
        "rank_zero_warn",
    "lightning.pytorch.cli":
        "Callback LightningArgumentParser LightningCLI LightningDataModule LightningModule "
        "MisconfigurationException ModuleType ReduceLROnPlateau RequirementCache "
        "SaveConfigCallback Trainer get_filesystem instantiate_class instantiate_module "
        "is_overridden rank_zero_warn seed_everything",
    "lightning.pytorch.core": "LightningDataModule LightningModule",
    "lightning.pytorch.core.datamodule":
        "DataHooks HyperparametersMixin LightningDataModule apply_to_collection",
    "lightning.pytorch.core.hooks":
        "CheckpointHooks DataHooks MisconfigurationException ModelHooks move_data_to_device",
    "lightning.pytorch.core.mixins": "HyperparametersMixin",
    "lightning.pytorch.core.mixins.hparams_mixin":
        "AttributeDict HyperparametersMixin save_hyperparameters",
    "lightning.pytorch.core.module":
        "Callback CheckpointHooks DataHooks FabricLogger GradClipAlgorithmType "
        "HyperparametersMixin LightningModule LightningOptimizer Logger "
        "MisconfigurationException ModelHooks RequirementCache WarningCache apply_to_collection "
        "convert_to_tensors get_filesystem is_param_in_hook_signature rank_zero_deprecation "
        "rank_zero_warn warning_cache",
    "lightning.pytorch.core.optimizer":
        "LRSchedulerConfig LightningOptimizer MisconfigurationException Optimizable "
        "do_nothing_closure is_overridden is_param_in_hook_signature rank_zero_warn",
    "lightning.pytorch.core.saving":
        "AttributeDict CUDAAccelerator MPSAccelerator XLAAccelerator apply_to_collection "
        "convert get_filesystem is_overridden load_hparams_from_tags_csv load_hparams_from_yaml "
        "parse_class_init_keys pl_legacy_patch pl_load rank_zero_warn save_hparams_to_tags_csv "
        "save_hparams_to_yaml update_hparams",
    "lightning.pytorch.demos":
        "BoringDataModule BoringModel DemoModel LightningLSTM LightningTransformer "
        "SequenceSampler SimpleLSTM Transformer WikiText2",
    "lightning.pytorch.demos.boring_classes":
        "BoringDataModule BoringDataModuleNoLen BoringModel DemoModel IterableBoringDataModule "
        "LightningDataModule LightningModule LightningOptimizer ManualOptimBoringModel Net "
        "RandomDataset RandomDictDataset RandomIterableDataset RandomIterableDatasetWithLen "
        "apply_to_collection",
    "lightning.pytorch.demos.lstm":
        "LightningLSTM LightningModule SequenceSampler SimpleLSTM WikiText2",
    "lightning.pytorch.demos.mnist_datamodule": "LightningDataModule MNIST MNISTDataModule",
    "lightning.pytorch.demos.transformer":
        "Dictionary LightningModule LightningTransformer PositionalEncoding RequirementCache "
        "Transformer WikiText2 tokenize",
    "lightning.pytorch.loggers":
        "CSVLogger CometLogger LitLogger Logger MLFlowLogger TensorBoardLogger WandbLogger",
    "lightning.pytorch.loggers.comet":
        "CometLogger Logger RequirementCache rank_zero_experiment rank_zero_only",
    "lightning.pytorch.loggers.csv_logs":
        "CSVLogger ExperimentWriter FabricCSVLogger Logger rank_zero_experiment rank_zero_only "
        "save_hparams_to_yaml",
    "lightning.pytorch.loggers.litlogger":
        "LitLogger Logger ModelCheckpoint RequirementCache get_filesystem rank_zero_experiment "
        "rank_zero_only",
    "lightning.pytorch.loggers.logger":
        "DummyExperiment DummyLogger FabricLogger Logger ModelCheckpoint merge_dicts "
        "rank_zero_experiment",
    "lightning.pytorch.loggers.mlflow":
        "Logger MLFlowLogger ModelCheckpoint RequirementCache rank_zero_experiment "
        "rank_zero_only rank_zero_warn",
    "lightning.pytorch.loggers.neptune": "NeptuneLogger",
    "lightning.pytorch.loggers.tensorboard":
        "FabricTensorBoardLogger Logger ModelCheckpoint TensorBoardLogger rank_zero_only "
        "rank_zero_warn save_hparams_to_yaml",
    "lightning.pytorch.loggers.utilities": "Checkpoint",
    "lightning.pytorch.loggers.wandb":
        "Logger MisconfigurationException ModelCheckpoint RequirementCache WandbLogger "
        "rank_zero_experiment rank_zero_only rank_zero_warn",
    "lightning.pytorch.loops": "",
    "lightning.pytorch.loops.evaluation_loop":
        "CombinedLoader RestartStage RunningStage SIGTERMException TrainerFn "
        "apply_to_collection has_len_all_ranks is_overridden is_param_in_hook_signature",
    "lightning.pytorch.loops.fetchers": "CombinedLoader MisconfigurationException sized_len",
    "lightning.pytorch.loops.fit_loop":
        "CombinedLoader MisconfigurationException PossibleUserWarning RestartStage RunningStage "
        "SIGTERMException TrainerFn has_len_all_ranks is_overridden rank_zero_debug "
        "rank_zero_info rank_zero_warn sized_len",
    "lightning.pytorch.loops.loop": "",
    "lightning.pytorch.loops.optimization": "",
    "lightning.pytorch.loops.optimization.automatic":
        "AbstractClosure Closure ClosureResult MisconfigurationException OutputResult "
        "WarningCache",
    "lightning.pytorch.loops.optimization.closure":
        "AbstractClosure MisconfigurationException OutputResult T",
    "lightning.pytorch.loops.optimization.manual":
        "ManualResult MisconfigurationException OutputResult do_nothing_closure",
    "lightning.pytorch.loops.prediction_loop":
        "BasePredictionWriter CombinedLoader MisconfigurationException RunningStage TrainerFn "
        "WarningCache has_len_all_ranks is_param_in_hook_signature move_data_to_device",
    "lightning.pytorch.loops.progress": "",
    "lightning.pytorch.loops.training_epoch_loop":
        "MisconfigurationException PossibleUserWarning RestartStage RunningStage "
        "SIGTERMException TrainerFn WarningCache is_param_in_hook_signature rank_zero_warn",
    "lightning.pytorch.loops.utilities":
        "FSDPStrategy ParallelStrategy PossibleUserWarning RunningStage Strategy Timer "
        "XLAAccelerator check_finite_loss is_param_in_hook_signature rank_zero_warn",
    "lightning.pytorch.overrides": "",
    "lightning.pytorch.overrides.distributed":
        "UnrepeatedDistributedSampler UnrepeatedDistributedSamplerWrapper prepare_for_backward "
        "rank_zero_debug rank_zero_info",
    "lightning.pytorch.plugins":
        "AsyncCheckpointIO BitsandbytesPrecision CheckpointIO DeepSpeedPrecision "
        "DoublePrecision FSDPPrecision HalfPrecision LayerSync MixedPrecision Precision "
        "TorchCheckpointIO TorchSyncBatchNorm TransformerEnginePrecision XLACheckpointIO "
        "XLAPrecision",
    "lightning.pytorch.plugins.environments":
        "ClusterEnvironment KubeflowEnvironment LSFEnvironment LightningEnvironment "
        "MPIEnvironment SLURMEnvironment TorchElasticEnvironment XLAEnvironment",
    "lightning.pytorch.plugins.io":
        "AsyncCheckpointIO CheckpointIO TorchCheckpointIO XLACheckpointIO",
    "lightning.pytorch.plugins.io.async_plugin": "AsyncCheckpointIO apply_to_collection",
    "lightning.pytorch.plugins.io.checkpoint_plugin": "CheckpointIO",
    "lightning.pytorch.plugins.io.torch_plugin": "TorchCheckpointIO",
    "lightning.pytorch.plugins.io.wrapper": "CheckpointIO",
    "lightning.pytorch.plugins.io.xla_plugin": "XLACheckpointIO",
    "lightning.pytorch.plugins.layer_sync": "LayerSync TorchSyncBatchNorm",
    "lightning.pytorch.plugins.precision":
        "BitsandbytesPrecision DeepSpeedPrecision DoublePrecision FSDPPrecision HalfPrecision "
        "MixedPrecision Precision TransformerEnginePrecision XLAPrecision",
    "lightning.pytorch.plugins.precision.amp":
        "GradClipAlgorithmType MisconfigurationException MixedPrecision MixedPrecisionPlugin "
        "Optimizable Precision",
    "lightning.pytorch.plugins.precision.bitsandbytes":
        "BitsandbytesPrecision BitsandbytesPrecisionPlugin FabricBNBPrecision Precision",
    "lightning.pytorch.plugins.precision.deepspeed":
        "DeepSpeedPrecision DeepSpeedPrecisionPlugin GradClipAlgorithmType "
        "MisconfigurationException Precision Steppable WarningCache apply_to_collection "
        "is_overridden warning_cache",
    "lightning.pytorch.plugins.precision.double":
        "DoublePrecision DoublePrecisionPlugin LightningDoublePrecisionModule Precision "
        "apply_to_collection rank_zero_deprecation",
    "lightning.pytorch.plugins.precision.fsdp":
        "FSDPMixedPrecisionPlugin FSDPPrecision FSDPPrecisionPlugin MisconfigurationException "
        "Optimizable Precision apply_to_collection rank_zero_warn",
    "lightning.pytorch.plugins.precision.half":
        "HalfPrecision HalfPrecisionPlugin Precision apply_to_collection",
    "lightning.pytorch.plugins.precision.precision":
        "CheckpointHooks FabricPrecision GradClipAlgorithmType Precision PrecisionPlugin "
        "Steppable",
    "lightning.pytorch.plugins.precision.transformer_engine":
        "FabricTEPrecision Precision TransformerEnginePrecision "
        "TransformerEnginePrecisionPlugin",
    "lightning.pytorch.plugins.precision.xla":
        "MisconfigurationException Optimizable Precision XLAPrecision XLAPrecisionPlugin",
    "lightning.pytorch.profilers":
        "AdvancedProfiler PassThroughProfiler Profiler PyTorchProfiler SimpleProfiler "
        "XLAProfiler",
    "lightning.pytorch.profilers.advanced":
        "AdvancedProfiler Profiler get_filesystem rank_zero_only",
    "lightning.pytorch.profilers.base": "PassThroughProfiler Profiler",
    "lightning.pytorch.profilers.profiler": "Profiler get_filesystem",
    "lightning.pytorch.profilers.pytorch":
        "MisconfigurationException Profiler PyTorchProfiler RegisterRecordFunction "
        "ScheduleWrapper WarningCache is_cuda_available rank_zero_warn warning_cache",
    "lightning.pytorch.profilers.simple": "Profiler SimpleProfiler",
    "lightning.pytorch.profilers.xla": "Profiler XLAProfiler",
    "lightning.pytorch.serve": "ServableModule ServableModuleValidator",
    "lightning.pytorch.serve.servable_module": "ServableModule",
    "lightning.pytorch.serve.servable_module_validator":
        "Callback DeepSpeedStrategy FSDPStrategy MisconfigurationException RequirementCache "
        "ServableModule ServableModuleValidator is_overridden rank_zero_only",
    "lightning.pytorch.strategies":
        "DDPStrategy DeepSpeedStrategy FSDPStrategy ModelParallelStrategy ParallelStrategy "
        "SingleDeviceStrategy Strategy",
    "lightning.pytorch.strategies.ddp":
        "CheckpointIO ClusterEnvironment DDPStrategy LightningOptimizer ParallelStrategy "
        "Precision TBroadcast TrainerFn prepare_for_backward rank_zero_deprecation "
        "rank_zero_info rank_zero_only reset_seed utils_rank_zero_only",
    "lightning.pytorch.strategies.deepspeed":
        "CUDAAccelerator ClusterEnvironment DDPStrategy DeepSpeedStrategy GradClipAlgorithmType "
        "LRSchedulerConfig MisconfigurationException Precision TrainerFn WarningCache "
        "is_overridden rank_zero_info rank_zero_warn remove_module_hooks reset_seed "
        "warning_cache",
    "lightning.pytorch.strategies.fsdp":
        "CheckpointIO ClusterEnvironment FSDPPrecision FSDPStrategy LightningOptimizer "
        "ParallelStrategy Precision TBroadcast TrainerFn is_overridden rank_zero_info "
        "rank_zero_only rank_zero_warn reset_seed utils_rank_zero_only",
    "lightning.pytorch.strategies.launchers": "",
    "lightning.pytorch.strategies.launchers.launcher": "",
    "lightning.pytorch.strategies.launchers.multiprocessing":
        "CPUAccelerator TrainerFn TrainerState apply_to_collection move_data_to_device "
        "rank_zero_debug",
    "lightning.pytorch.strategies.launchers.subprocess_script":
        "ClusterEnvironment RequirementCache",
    "lightning.pytorch.strategies.launchers.xla": "TrainerFn move_data_to_device rank_zero_debug",
    "lightning.pytorch.strategies.model_parallel":
        "LightningOptimizer ModelParallelStrategy ParallelStrategy TBroadcast TrainerFn "
        "is_overridden rank_zero_only reset_seed utils_rank_zero_only",
    "lightning.pytorch.strategies.parallel":
        "CheckpointIO ClusterEnvironment LayerSync ParallelStrategy Precision Strategy",
    "lightning.pytorch.strategies.single_device":
        "CheckpointIO Precision SingleDeviceStrategy Strategy TBroadcast",
    "lightning.pytorch.strategies.single_xla":
        "CheckpointIO Precision SingleDeviceStrategy SingleDeviceXLAStrategy TrainerFn "
        "XLACheckpointIO XLAPrecision find_shared_parameters set_shared_parameters",
    "lightning.pytorch.strategies.strategy":
        "CheckpointIO LRSchedulerConfig LightningOptimizer Precision Strategy TBroadcast "
        "TReduce TorchCheckpointIO TrainerFn move_data_to_device",
    "lightning.pytorch.strategies.xla":
        "CheckpointIO DDPStrategy Precision TBroadcast TrainerFn XLACheckpointIO XLAEnvironment "
        "XLAPrecision XLAStrategy find_shared_parameters rank_zero_only set_shared_parameters",
    "lightning.pytorch.trainer": "Trainer seed_everything",
    "lightning.pytorch.trainer.call":
        "Checkpoint EarlyStopping TrainerStatus WandbLogger is_overridden rank_zero_info "
        "rank_zero_warn",
    "lightning.pytorch.trainer.configuration_validator":
        "MisconfigurationException PossibleUserWarning TrainerFn is_overridden "
        "is_param_in_hook_signature rank_zero_deprecation rank_zero_warn",
    "lightning.pytorch.trainer.connectors": "",
    "lightning.pytorch.trainer.connectors.accelerator_connector":
        "Accelerator AcceleratorRegistry BitsandbytesPrecision CUDAAccelerator CheckpointIO "
        "ClusterEnvironment DDPStrategy DeepSpeedPrecision DeepSpeedStrategy DoublePrecision "
        "FSDPPrecision FSDPStrategy HalfPrecision LSFEnvironment LayerSync LightningEnvironment "
        "MPIEnvironment MPSAccelerator MisconfigurationException MixedPrecision "
        "ModelParallelStrategy ParallelStrategy Precision SLURMEnvironment SingleDeviceStrategy "
        "SingleDeviceXLAStrategy Strategy StrategyRegistry TorchElasticEnvironment "
        "TorchSyncBatchNorm TransformerEnginePrecision XLAAccelerator XLAPrecision XLAStrategy "
        "rank_zero_info rank_zero_warn",
    "lightning.pytorch.trainer.connectors.callback_connector":
        "BatchSizeFinder Callback Checkpoint LearningRateFinder LitLogger "
        "MisconfigurationException ModelCheckpoint ModelSummary ProgressBar RequirementCache "
        "RichModelSummary RichProgressBar TQDMProgressBar Timer is_overridden rank_zero_info",
    "lightning.pytorch.trainer.connectors.checkpoint_connector":
        "MisconfigurationException MixedPrecision ModelCheckpoint SLURMEnvironment TrainerFn "
        "find_model_local_ckpt_path get_filesystem module_available pl_legacy_patch "
        "rank_zero_info rank_zero_warn",
    "lightning.pytorch.trainer.connectors.data_connector":
        "CombinedLoader DistributedSamplerWrapper MisconfigurationException PossibleUserWarning "
        "RunningStage TrainerFn UnrepeatedDistributedSamplerWrapper WarningCache "
        "has_iterable_dataset is_overridden rank_zero_warn suggested_max_num_workers "
        "warning_cache",
    "lightning.pytorch.trainer.connectors.logger_connector": "",
    "lightning.pytorch.trainer.connectors.logger_connector.fx_validator":
        "MisconfigurationException",
    "lightning.pytorch.trainer.connectors.logger_connector.logger_connector":
        "CSVLogger LitLogger Logger SLURMEnvironment TensorBoardLogger WarningCache "
        "apply_to_collection convert_tensors_to_scalars move_data_to_device rank_zero_info "
        "warning_cache",
    "lightning.pytorch.trainer.connectors.logger_connector.result":
        "MisconfigurationException PossibleUserWarning WarningCache apply_to_collection "
        "convert_tensors_to_scalars extract_batch_size move_data_to_device rank_zero_warn "
        "recursive_detach warning_cache",
    "lightning.pytorch.trainer.connectors.signal_connector":
        "SLURMEnvironment rank_prefixed_message rank_zero_info",
    "lightning.pytorch.trainer.setup":
        "AdvancedProfiler CUDAAccelerator DummyLogger MPSAccelerator MisconfigurationException "
        "PassThroughProfiler PossibleUserWarning Profiler PyTorchProfiler SimpleProfiler "
        "XLAAccelerator XLAProfiler rank_zero_info rank_zero_warn",
    "lightning.pytorch.trainer.states":
        "LightningEnum RunningStage TrainerFn TrainerState TrainerStatus",
    "lightning.pytorch.trainer.trainer":
        "Accelerator CSVLogger Callback Checkpoint EarlyStopping GradClipAlgorithmType "
        "LRSchedulerConfig LightningDataModule Logger MisconfigurationException "
        "ParallelStrategy PossibleUserWarning Precision Profiler ProgressBar RunningStage "
        "Strategy TensorBoardLogger Trainer TrainerFn TrainerState TrainerStatus "
        "convert_tensors_to_scalars download_model_from_registry is_overridden isolate_rng "
        "module_available rank_zero_info rank_zero_warn",
    "lightning.pytorch.tuner": "Tuner",
    "lightning.pytorch.tuner.batch_size_scaling":
        "garbage_collection_cuda is_oom_error lightning_getattr lightning_setattr "
        "rank_zero_info rank_zero_warn",
    "lightning.pytorch.tuner.lr_finder":
        "Callback LRSchedulerConfig MisconfigurationException RequirementCache "
        "lightning_hasattr lightning_setattr rank_zero_warn",
    "lightning.pytorch.tuner.tuning": "Callback MisconfigurationException Tuner",
    "lightning.pytorch.utilities":
        "AttributeDict CombinedLoader GradClipAlgorithmType LightningEnum "
        "disable_possible_user_warnings find_shared_parameters grad_norm is_picklable "
        "is_shared_filesystem measure_flops move_data_to_device rank_zero_deprecation "
        "rank_zero_info rank_zero_only rank_zero_warn set_shared_parameters "
        "suggested_max_num_workers",
    "lightning.pytorch.utilities.argparse": "",
    "lightning.pytorch.utilities.combined_loader": "CombinedLoader sized_len",
    "lightning.pytorch.utilities.compile":
        "DDPStrategy DeepSpeedStrategy FSDPStrategy SingleDeviceStrategy Strategy from_compiled "
        "to_uncompiled",
    "lightning.pytorch.utilities.consolidate_checkpoint": "",
    "lightning.pytorch.utilities.data":
        "MisconfigurationException PossibleUserWarning RunningStage WarningCache "
        "extract_batch_size has_iterable_dataset has_len_all_ranks is_dataclass_instance "
        "rank_zero_warn sized_len warning_cache",
    "lightning.pytorch.utilities.deepspeed":
        "convert_zero_checkpoint_to_fp32_state_dict ds_checkpoint_dir",
    "lightning.pytorch.utilities.enums": "GradClipAlgorithmType LightningEnum",
    "lightning.pytorch.utilities.exceptions": "MisconfigurationException SIGTERMException",
    "lightning.pytorch.utilities.grads": "grad_norm",
    "lightning.pytorch.utilities.imports":
        "RequirementCache compare_version package_available rank_zero_warn",
    "lightning.pytorch.utilities.memory":
        "apply_to_collection garbage_collection_cuda is_cuda_out_of_memory is_cudnn_snafu "
        "is_oom_error is_out_of_cpu_memory recursive_detach",
    "lightning.pytorch.utilities.migration": "migrate_checkpoint pl_legacy_patch",
    "lightning.pytorch.utilities.migration.migration":
        "EarlyStopping ModelCheckpoint PossibleUserWarning rank_zero_warn",
    "lightning.pytorch.utilities.migration.utils":
        "LightningEnum PossibleUserWarning migrate_checkpoint pl_legacy_patch rank_zero_warn",
    "lightning.pytorch.utilities.model_helpers":
        "RequirementCache get_torchvision_model is_overridden",
    "lightning.pytorch.utilities.model_registry":
        "download_model_from_registry find_model_local_ckpt_path module_available",
    "lightning.pytorch.utilities.model_summary":
        "DeepSpeedSummary LayerSummary ModelSummary get_formatted_model_size "
        "get_human_readable_count parse_batch_shape summarize",
    "lightning.pytorch.utilities.model_summary.model_summary":
        "LayerSummary ModelSummary WarningCache get_formatted_model_size "
        "get_human_readable_count parse_batch_shape rank_zero_warn summarize warning_cache",
    "lightning.pytorch.utilities.model_summary.model_summary_deepspeed":
        "DeepSpeedLayerSummary DeepSpeedSummary LayerSummary ModelSummary RequirementCache "
        "deepspeed_param_size get_human_readable_count",
    "lightning.pytorch.utilities.parameter_tying": "find_shared_parameters set_shared_parameters",
    "lightning.pytorch.utilities.parsing":
        "AttributeDict clean_namespace collect_init_args get_init_args is_picklable "
        "lightning_getattr lightning_hasattr lightning_setattr parse_class_init_keys "
        "rank_zero_warn save_hyperparameters",
    "lightning.pytorch.utilities.rank_zero":
        "LightningDeprecationWarning WarningCache rank_prefixed_message rank_zero_debug "
        "rank_zero_deprecation rank_zero_info rank_zero_only rank_zero_warn",
    "lightning.pytorch.utilities.seed": "isolate_rng",
    "lightning.pytorch.utilities.signature_utils": "is_param_in_hook_signature",
    "lightning.pytorch.utilities.testing": "",
    "lightning.pytorch.utilities.types":
        "DistributedDataParallel LRSchedulerConfig LRSchedulerConfigType OptimizerConfig "
        "OptimizerLRSchedulerConfig",
    "lightning.pytorch.utilities.upgrade_checkpoint": "main migrate_checkpoint pl_legacy_patch",
    "lightning.pytorch.utilities.warnings": "PossibleUserWarning",
    "lightning.fabric": "Fabric is_wrapped seed_everything",
    "lightning.fabric.accelerators":
        "ACCELERATOR_REGISTRY Accelerator CPUAccelerator CUDAAccelerator MPSAccelerator "
        "TPUAccelerator XLAAccelerator find_usable_cuda_devices",
    "lightning.fabric.accelerators.accelerator": "Accelerator",
    "lightning.fabric.accelerators.cpu": "Accelerator CPUAccelerator",
    "lightning.fabric.accelerators.cuda":
        "Accelerator CUDAAccelerator find_usable_cuda_devices is_cuda_available "
        "num_cuda_devices rank_zero_info",
    "lightning.fabric.accelerators.mps": "Accelerator MPSAccelerator",
    "lightning.fabric.accelerators.registry":
        "MisconfigurationException call_register_accelerators",
    "lightning.fabric.accelerators.xla": "Accelerator RequirementCache XLAAccelerator",
    "lightning.fabric.cli":
        "CPUAccelerator CUDAAccelerator MPSAccelerator RequirementCache STRATEGY_REGISTRY main",
    "lightning.fabric.connector":
        "ACCELERATOR_REGISTRY Accelerator BitsandbytesPrecision CUDAAccelerator CheckpointIO "
        "ClusterEnvironment DeepSpeedPrecision DeepSpeedStrategy DoublePrecision FSDPPrecision "
        "FSDPStrategy HalfPrecision LSFEnvironment LightningEnvironment MPIEnvironment "
        "MPSAccelerator MixedPrecision ModelParallelStrategy ParallelStrategy Precision "
        "SLURMEnvironment STRATEGY_REGISTRY SingleDeviceStrategy SingleDeviceXLAStrategy "
        "Strategy TorchElasticEnvironment TransformerEnginePrecision XLAAccelerator "
        "XLAFSDPStrategy XLAPrecision XLAStrategy rank_zero_info rank_zero_warn",
    "lightning.fabric.fabric":
        "Accelerator DataParallelStrategy DeepSpeedStrategy DistributedSamplerWrapper "
        "FSDPStrategy Fabric Logger PossibleUserWarning Precision SingleDeviceStrategy Strategy "
        "TBroadcast XLAStrategy apply_to_collection convert_tensors_to_scalars "
        "convert_to_tensors has_iterable_dataset is_overridden move_data_to_device "
        "rank_zero_deprecation rank_zero_warn seed_everything",
    "lightning.fabric.loggers": "CSVLogger Logger TensorBoardLogger",
    "lightning.fabric.loggers.csv_logs":
        "CSVLogger Logger get_filesystem rank_zero_experiment rank_zero_only rank_zero_warn",
    "lightning.fabric.loggers.logger": "Logger rank_zero_experiment rank_zero_only",
    "lightning.fabric.loggers.tensorboard":
        "Logger RequirementCache TensorBoardLogger get_filesystem rank_zero_experiment "
        "rank_zero_only rank_zero_warn",
    "lightning.fabric.plugins":
        "BitsandbytesPrecision CheckpointIO ClusterEnvironment DeepSpeedPrecision "
        "DoublePrecision FSDPPrecision HalfPrecision MixedPrecision Precision TorchCheckpointIO "
        "TransformerEnginePrecision XLACheckpointIO XLAPrecision",
    "lightning.fabric.plugins.collectives": "Collective SingleDeviceCollective TorchCollective",
    "lightning.fabric.plugins.collectives.collective": "CollectibleGroup Collective",
    "lightning.fabric.plugins.collectives.single_device":
        "CollectibleGroup Collective SingleDeviceCollective",
    "lightning.fabric.plugins.collectives.torch_collective":
        "CollectibleGroup Collective TorchCollective",
    "lightning.fabric.plugins.environments":
        "ClusterEnvironment KubeflowEnvironment LSFEnvironment LightningEnvironment "
        "MPIEnvironment SLURMEnvironment TorchElasticEnvironment XLAEnvironment",
    "lightning.fabric.plugins.environments.cluster_environment": "ClusterEnvironment",
    "lightning.fabric.plugins.environments.kubeflow": "ClusterEnvironment KubeflowEnvironment",
    "lightning.fabric.plugins.environments.lightning":
        "ClusterEnvironment LightningEnvironment find_free_network_port rank_zero_only",
    "lightning.fabric.plugins.environments.lsf": "ClusterEnvironment LSFEnvironment get_filesystem",
    "lightning.fabric.plugins.environments.mpi":
        "ClusterEnvironment MPIEnvironment RequirementCache find_free_network_port",
    "lightning.fabric.plugins.environments.slurm":
        "ClusterEnvironment PossibleUserWarning SLURMEnvironment rank_zero_warn",
    "lightning.fabric.plugins.environments.torchelastic":
        "ClusterEnvironment TorchElasticEnvironment rank_zero_warn",
    "lightning.fabric.plugins.environments.xla": "ClusterEnvironment XLAAccelerator XLAEnvironment",
    "lightning.fabric.plugins.io": "CheckpointIO TorchCheckpointIO XLACheckpointIO",
    "lightning.fabric.plugins.io.checkpoint_io": "CheckpointIO",
    "lightning.fabric.plugins.io.torch_io": "CheckpointIO TorchCheckpointIO get_filesystem pl_load",
    "lightning.fabric.plugins.io.xla":
        "RequirementCache TorchCheckpointIO XLACheckpointIO apply_to_collection get_filesystem",
    "lightning.fabric.plugins.precision":
        "BitsandbytesPrecision DeepSpeedPrecision DoublePrecision FSDPPrecision HalfPrecision "
        "MixedPrecision Precision TransformerEnginePrecision XLAPrecision",
    "lightning.fabric.plugins.precision.amp":
        "MixedPrecision Optimizable Precision apply_to_collection",
    "lightning.fabric.plugins.precision.bitsandbytes":
        "BitsandbytesPrecision Precision RequirementCache apply_to_collection",
    "lightning.fabric.plugins.precision.deepspeed":
        "DeepSpeedPrecision Precision Steppable apply_to_collection",
    "lightning.fabric.plugins.precision.double": "DoublePrecision Precision apply_to_collection",
    "lightning.fabric.plugins.precision.fsdp":
        "FSDPPrecision Optimizable Precision apply_to_collection rank_zero_warn",
    "lightning.fabric.plugins.precision.half": "HalfPrecision Precision apply_to_collection",
    "lightning.fabric.plugins.precision.precision": "Optimizable Precision",
    "lightning.fabric.plugins.precision.transformer_engine":
        "Precision RequirementCache TransformerEnginePrecision apply_to_collection "
        "rank_zero_info rank_zero_warn",
    "lightning.fabric.plugins.precision.utils": "",
    "lightning.fabric.plugins.precision.xla": "Optimizable Precision XLAPrecision",
    "lightning.fabric.strategies":
        "DDPStrategy DataParallelStrategy DeepSpeedStrategy FSDPStrategy ModelParallelStrategy "
        "ParallelStrategy STRATEGY_REGISTRY SingleDeviceStrategy SingleDeviceXLAStrategy "
        "SingleTPUStrategy Strategy XLAFSDPStrategy XLAStrategy",
    "lightning.fabric.strategies.ddp":
        "Accelerator CheckpointIO ClusterEnvironment DDPStrategy ParallelStrategy Precision "
        "TBroadcast rank_zero_only utils_rank_zero_only",
    "lightning.fabric.strategies.deepspeed":
        "Accelerator CUDAAccelerator ClusterEnvironment DDPStrategy DeepSpeedStrategy Precision "
        "RequirementCache rank_zero_info rank_zero_warn reset_seed",
    "lightning.fabric.strategies.dp":
        "Accelerator CheckpointIO DataParallelStrategy ParallelStrategy Precision TBroadcast "
        "TReduce apply_to_collection",
    "lightning.fabric.strategies.fsdp":
        "Accelerator CheckpointIO ClusterEnvironment FSDPPrecision FSDPStrategy "
        "ParallelStrategy Precision RequirementCache TBroadcast rank_zero_deprecation "
        "rank_zero_only rank_zero_warn reset_seed utils_rank_zero_only",
    "lightning.fabric.strategies.launchers": "",
    "lightning.fabric.strategies.launchers.launcher": "",
    "lightning.fabric.strategies.launchers.multiprocessing":
        "CPUAccelerator apply_to_collection move_data_to_device",
    "lightning.fabric.strategies.launchers.subprocess_script":
        "ClusterEnvironment RequirementCache rank_prefixed_message",
    "lightning.fabric.strategies.launchers.xla": "move_data_to_device",
    "lightning.fabric.strategies.model_parallel":
        "CheckpointIO ModelParallelStrategy ParallelStrategy TBroadcast TModel rank_zero_only "
        "reset_seed utils_rank_zero_only",
    "lightning.fabric.strategies.parallel":
        "Accelerator CheckpointIO ClusterEnvironment ParallelStrategy Precision Strategy",
    "lightning.fabric.strategies.registry": "",
    "lightning.fabric.strategies.single_device":
        "Accelerator CheckpointIO Precision SingleDeviceStrategy Strategy TBroadcast",
    "lightning.fabric.strategies.single_xla":
        "Accelerator CheckpointIO Precision SingleDeviceStrategy SingleDeviceXLAStrategy "
        "XLACheckpointIO XLAPrecision",
    "lightning.fabric.strategies.strategy":
        "Accelerator CheckpointIO Optimizable Precision Strategy TBroadcast TReduce "
        "TorchCheckpointIO move_data_to_device",
    "lightning.fabric.strategies.xla":
        "Accelerator CheckpointIO ParallelStrategy Precision TBroadcast XLACheckpointIO "
        "XLAEnvironment XLAPrecision XLAStrategy rank_zero_only",
    "lightning.fabric.strategies.xla_fsdp":
        "Accelerator CheckpointIO Optimizable ParallelStrategy Precision TBroadcast "
        "XLACheckpointIO XLAEnvironment XLAFSDPStrategy XLAPrecision get_filesystem "
        "rank_zero_only rank_zero_warn",
    "lightning.fabric.utilities":
        "AttributeDict LightningEnum Throughput ThroughputMonitor "
        "disable_possible_user_warnings is_shared_filesystem measure_flops move_data_to_device "
        "rank_zero_deprecation rank_zero_info rank_zero_only rank_zero_warn "
        "suggested_max_num_workers",
    "lightning.fabric.utilities.apply_func":
        "apply_to_collection convert_tensors_to_scalars convert_to_tensors move_data_to_device",
    "lightning.fabric.utilities.cloud_io": "get_filesystem module_available",
    "lightning.fabric.utilities.consolidate_checkpoint": "",
    "lightning.fabric.utilities.data":
        "AttributeDict LightningEnum MisconfigurationException get_all_subclasses "
        "has_iterable_dataset has_len pl_worker_init_function rank_zero_warn sized_len "
        "suggested_max_num_workers",
    "lightning.fabric.utilities.device_dtype_mixin": "",
    "lightning.fabric.utilities.device_parser": "MisconfigurationException",
    "lightning.fabric.utilities.distributed":
        "DistributedSamplerWrapper is_shared_filesystem rank_zero_info",
    "lightning.fabric.utilities.enums": "LightningEnum",
    "lightning.fabric.utilities.exceptions": "MisconfigurationException",
    "lightning.fabric.utilities.imports": "RequirementCache compare_version",
    "lightning.fabric.utilities.init": "rank_zero_warn",
    "lightning.fabric.utilities.load": "apply_to_collection",
    "lightning.fabric.utilities.logger": "",
    "lightning.fabric.utilities.optimizer": "apply_to_collection move_data_to_device",
    "lightning.fabric.utilities.rank_zero":
        "LightningDeprecationWarning WarningCache rank_prefixed_message rank_zero_debug "
        "rank_zero_deprecation rank_zero_info rank_zero_only rank_zero_warn",
    "lightning.fabric.utilities.registry": "is_overridden",
    "lightning.fabric.utilities.seed":
        "pl_worker_init_function rank_prefixed_message rank_zero_only rank_zero_warn reset_seed "
        "seed_everything",
    "lightning.fabric.utilities.spike": "SpikeDetection TrainingSpikeException",
    "lightning.fabric.utilities.testing": "",
    "lightning.fabric.utilities.throughput":
        "T Throughput ThroughputMonitor get_available_flops measure_flops rank_zero_only "
        "rank_zero_warn",
    "lightning.fabric.utilities.types": "CollectibleGroup Optimizable Steppable",
    "lightning.fabric.utilities.warnings":
        "LightningDeprecationWarning PossibleUserWarning disable_possible_user_warnings",
    "lightning.fabric.wrappers":
        "Optimizable Precision Strategy T_destination apply_to_collection is_overridden "
        "is_wrapped move_data_to_device",
}
