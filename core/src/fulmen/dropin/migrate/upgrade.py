"""The mechanical parts of Lightning's 1.x -> 2.x upgrade that ``fulmen migrate`` rewrites (or
lists as not migrated): renamed and removed Trainer flags, renamed and removed module hooks."""

from __future__ import annotations

# Lightning 1.x Trainer flags: renamed ones, and removed ones with what to do instead.
RENAMED_FLAGS = {"replace_sampler_ddp": "use_distributed_sampler",
                 "checkpoint_callback": "enable_checkpointing"}
DEVICE_FLAGS = {"gpus": "gpu", "tpu_cores": "tpu", "num_processes": "cpu", "ipus": "ipu",
                "hpus": "hpu"}
STRATEGY_ACCELERATORS = {"ddp", "ddp_spawn", "ddp2", "dp", "ddp_sharded", "deepspeed", "horovod",
                         "ddp_fork", "fsdp"}
PRECISIONS = {"16": "16-mixed", "bf16": "bf16-mixed", "32": "32-true", "64": "64-true"}
REMOVED_FLAGS = {
    "resume_from_checkpoint": "pass the path to trainer.fit(ckpt_path=...)",
    "auto_select_gpus": "use devices='auto' or lightning's find_usable_cuda_devices()",
    "track_grad_norm": "log the gradient norms in on_before_optimizer_step",
    "amp_backend": "precision='16-mixed' uses torch.autocast; apex is gone",
    "amp_level": "precision='16-mixed' uses torch.autocast; apex is gone",
    "auto_lr_find": "use fulmen.tuner.Tuner(trainer).lr_find(model)",
    "auto_scale_batch_size": "use fulmen.tuner.Tuner(trainer).scale_batch_size(model)",
    "progress_bar_refresh_rate": "use callbacks=[TQDMProgressBar(refresh_rate=...)]",
    "weights_summary": "use callbacks=[ModelSummary(max_depth=...)] or enable_model_summary",
    "flush_logs_every_n_steps": "pass flush_logs_every_n_steps to the logger",
    "terminate_on_nan": "use detect_anomaly=True",
    "prepare_data_per_node": "set prepare_data_per_node on the DataModule or Module",
    "stochastic_weight_avg": "use callbacks=[StochasticWeightAveraging(...)]",
    "move_metrics_to_cpu": "removed in Lightning 2.0",
    "multiple_trainloader_mode": "wrap the loaders in CombinedLoader(mode=...)",
    "process_position": "use callbacks=[TQDMProgressBar(process_position=...)]",
    "truncated_bptt_steps": "split the sequence in training_step (manual optimization)",
    "weights_save_path": "use ModelCheckpoint(dirpath=...)",
    "log_gpu_memory": "use callbacks=[DeviceStatsMonitor()]",
}
EPOCH_END = {"training_epoch_end": "train", "validation_epoch_end": "validation",
             "test_epoch_end": "test"}
RENAMED_HOOKS = {"on_pretrain_routine_start": "on_fit_start",
                 "on_pretrain_routine_end": "on_fit_start"}
_STEP_END = ("removed in Lightning 2.0 (fulmen calls it under dp/ddp2 only): do the work at the "
             "end of the step")
REMOVED_HOOKS = {
    "training_step_end": _STEP_END, "validation_step_end": _STEP_END,
    "test_step_end": _STEP_END,
    "on_epoch_start": "use on_train_epoch_start / on_validation_epoch_start",
    "on_epoch_end": "use on_train_epoch_end / on_validation_epoch_end",
    "on_batch_start": "use on_train_batch_start", "on_batch_end": "use on_train_batch_end",
    "get_progress_bar_dict": "override the progress bar's get_metrics",
}
