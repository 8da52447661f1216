"""Cluster-environment plugins for fulmen. Classes load on first access."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "LocalEnvironment": "fulmen_environments.local.environment",
    "TorchElasticEnvironment": "fulmen_environments.torchelastic.environment",
    "SLURMEnvironment": "fulmen_environments.slurm.environment",
    "LSFEnvironment": "fulmen_environments.lsf.environment",
    "MPIEnvironment": "fulmen_environments.mpi.environment",
    "KubeflowEnvironment": "fulmen_environments.kubeflow.environment",
}
__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
