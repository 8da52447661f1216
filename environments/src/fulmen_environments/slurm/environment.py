"""``SLURMEnvironment``: ``srun`` started one process per task; SLURM says who is who."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping

from fulmen import ConfigurationError, FulmenError
from fulmen_environments import variables as v
from fulmen_environments.scheduled import ScheduledEnvironment
from fulmen_environments.slurm import SPEC
from fulmen_environments.slurm.nodelist import expand

REQUIRED = ("SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
            "SLURM_JOB_NODELIST", "SLURM_JOB_ID")


class SLURMEnvironment(ScheduledEnvironment):
    """Reads ``SLURM_NTASKS`` (world size), ``SLURM_PROCID``, ``SLURM_LOCALID``,
    ``SLURM_NODEID`` and ``SLURM_JOB_NODELIST`` (the first host is the rendezvous). The port is
    ``MASTER_PORT`` if set, else derived from ``SLURM_JOB_ID`` so every task agrees on it.

    ``auto_requeue``: on ``requeue_signal`` (``sbatch --signal=USR1@90`` sends it 90 s before the
    time limit) the Trainer saves ``hpc_ckpt_<n>.ckpt`` in ``default_root_dir``, runs
    ``scontrol requeue`` and exits; the requeued job (``SLURM_RESTART_COUNT`` > 0) resumes from it.
    On ``SIGTERM`` (``scancel``, the time limit) it saves the checkpoint and exits without
    requeueing. ``auto_requeue=False`` leaves both signals alone.
    """

    name = SPEC.name  # the registered name, from the plugin's record

    def __init__(self, environ: Mapping[str, str] | None = None, auto_requeue: bool = True,
                 requeue_signal: signal.Signals = signal.SIGUSR1) -> None:
        super().__init__(environ)
        self.auto_requeue = auto_requeue
        self.requeue_signal = requeue_signal

    @property
    def main_address(self) -> str:
        if "MASTER_ADDR" in self.environ:
            return self.environ["MASTER_ADDR"]
        nodes = self.environ.get("SLURM_JOB_NODELIST", self.environ.get("SLURM_NODELIST"))
        return expand(nodes)[0] if nodes else "127.0.0.1"  # Lightning's default

    @property
    def main_port(self) -> int:
        if "MASTER_PORT" in self.environ:
            return v.port(self.environ["MASTER_PORT"], "MASTER_PORT")
        if "SLURM_JOB_ID" not in self.environ:
            return 12910  # Lightning's default
        job_id = v.integer(self.environ, "SLURM_JOB_ID")
        return 15000 + int(str(job_id)[-4:])  # Lightning's: the job id's last four digits

    @staticmethod
    def job_name() -> str | None:
        """``SLURM_JOB_NAME`` (Lightning's ``SLURMEnvironment.job_name()``)."""
        return os.environ.get("SLURM_JOB_NAME")

    @staticmethod
    def job_id() -> int | None:
        """``SLURM_JOB_ID`` as an int; None when unset, not a number, or in an interactive
        shell (``salloc``: job name ``bash`` or ``interactive``), as in Lightning."""
        if SLURMEnvironment.job_name() in ("bash", "interactive"):
            return None
        try:
            return int(os.environ["SLURM_JOB_ID"])
        except (KeyError, ValueError):
            return None

    @staticmethod
    def detect() -> bool:
        return "SLURM_NTASKS" in os.environ and os.environ.get("SLURM_JOB_NAME") not in (
            "bash", "interactive")

    def world_size(self) -> int:
        return v.integer(self.environ, "SLURM_NTASKS", 1)

    def global_rank(self) -> int:
        return v.integer(self.environ, "SLURM_PROCID")

    def local_rank(self) -> int:
        return v.integer(self.environ, "SLURM_LOCALID")

    def node_rank(self) -> int:
        return v.integer(self.environ, "SLURM_NODEID")

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        v.require("SLURM", self.environ, REQUIRED)
        v.check_ranks("SLURM", self.world_size(), self.global_rank())
        _ = self.main_address, self.main_port  # the node list and port must read
        per_node = self.environ.get("SLURM_NTASKS_PER_NODE", "").split("(")[0]
        if per_node.isdigit() and int(per_node) != num_devices:
            raise ConfigurationError(
                f"SLURM runs {per_node} tasks per node (--ntasks-per-node), but the Trainer was "
                f"given devices={num_devices}; they must be equal")
        nodes = self.environ.get("SLURM_NNODES", "")
        if nodes.isdigit() and int(nodes) != num_nodes:
            raise ConfigurationError(
                f"the SLURM job has {nodes} nodes (--nodes), but the Trainer was given "
                f"num_nodes={num_nodes}; they must be equal")
        if self.world_size() != num_devices * num_nodes:
            raise ConfigurationError(
                f"SLURM started {self.world_size()} tasks (SLURM_NTASKS), but devices="
                f"{num_devices} x num_nodes={num_nodes} makes {num_devices * num_nodes}")

    # ------------------------------------------------------------------ preemption

    def preemption_signals(self) -> Mapping[int, str]:
        if not self.auto_requeue:
            return {}
        return {self.requeue_signal: "requeue", signal.SIGTERM: "stop"}

    def requeue(self) -> None:
        """``scontrol requeue`` this job (an array task as ``<array job>_<task>``)."""
        job = self.environ.get("SLURM_JOB_ID", "")
        if "SLURM_ARRAY_JOB_ID" in self.environ and "SLURM_ARRAY_TASK_ID" in self.environ:
            job = f"{self.environ['SLURM_ARRAY_JOB_ID']}_{self.environ['SLURM_ARRAY_TASK_ID']}"
        scontrol = shutil.which("scontrol")
        if scontrol is None:
            raise FulmenError("cannot requeue: `scontrol` is not on PATH")
        done = subprocess.run([scontrol, "requeue", job], capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise FulmenError(f"`scontrol requeue {job}` failed with status {done.returncode}: "
                              f"{(done.stderr or done.stdout).strip()}")

    def restart_count(self) -> int:
        """``SLURM_RESTART_COUNT``: how often SLURM requeued this job."""
        if "SLURM_RESTART_COUNT" not in self.environ:
            return 0
        return v.integer(self.environ, "SLURM_RESTART_COUNT")
