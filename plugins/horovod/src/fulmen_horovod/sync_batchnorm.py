"""Replacing batch-norm layers by Horovod's ``SyncBatchNorm`` (statistics over all ranks)."""

from __future__ import annotations

import torch


def convert_sync_batchnorm(module: torch.nn.Module, sync_class: type) -> torch.nn.Module:
    """``module`` with every ``BatchNorm*d`` replaced by ``sync_class`` (same parameters and
    running statistics), like ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``."""
    out = module
    if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and not isinstance(
            module, sync_class):
        out = sync_class(module.num_features, module.eps, module.momentum, module.affine,
                         module.track_running_stats)
        if module.affine:
            with torch.no_grad():
                out.weight = module.weight
                out.bias = module.bias
        out.running_mean = module.running_mean
        out.running_var = module.running_var
        out.num_batches_tracked = module.num_batches_tracked
        out.train(module.training)
    for name, child in module.named_children():
        out.add_module(name, convert_sync_batchnorm(child, sync_class))
    return out
