"""``fulmen doctor``: what a bug report about a run on this machine needs, in one paste.

Versions (Python, torch, CUDA, NCCL, fulmen and every plugin distribution), the process-group
backends torch has, the cluster variables this process sees and what the detectors make of them,
CPU and thread settings, the network interfaces, and whether the main port is free. It reads;
it starts no process group and changes nothing.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from importlib import metadata
from typing import Any

#: Prefixes and names of the variables launchers and schedulers set (torchrun, SLURM, LSF,
#: Open MPI / PMI, Kubeflow, Horovod) and the ones that change how torch runs.
VARIABLE_PREFIXES = ("SLURM_", "TORCHELASTIC_", "LSB_", "JSM_", "OMPI_", "PMI_", "PMIX_",
                     "HOROVOD_", "NCCL_", "GLOO_", "FULMEN_", "CUDA_", "TORCH_")
VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
             "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
DEFAULT_PORT = 29500


def report(detection: dict[str, Any]) -> dict[str, Any]:
    """Everything ``fulmen doctor`` prints; ``detection`` is what ``fulmen plugins --detect``
    reports (each detector's answer and what ``"auto"`` would compose)."""
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    port = int(os.environ.get("MASTER_PORT", DEFAULT_PORT)) if os.environ.get(
        "MASTER_PORT", "").isdigit() else DEFAULT_PORT
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "versions": _versions(),
        "torch": {"version": torch.__version__, "cuda_available": cuda,
                  "cuda": torch.version.cuda, "device_count": torch.cuda.device_count() if cuda
                  else 0,
                  "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
                  "backends": {name: available() for name, available in (
                      ("gloo", dist.is_gloo_available), ("nccl", dist.is_nccl_available),
                      ("mpi", dist.is_mpi_available))}},
        "cpu": {"cores": os.cpu_count(), "usable": _usable_cores(),
                "torch_threads": torch.get_num_threads()},
        "variables": {k: v for k, v in sorted(os.environ.items())
                      if k in VARIABLES or k.startswith(VARIABLE_PREFIXES)},
        "detection": detection,
        "network": _interfaces(),
        "main_port": {"port": port, "free": _port_free(port)},
    }


def _usable_cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count()


def _versions() -> dict[str, str]:
    out = {"fulmen-core": metadata.version("fulmen-core")}
    try:  # the distribution users install; absent where only the kernel was installed
        out["fulmen"] = metadata.version("fulmen")
    except metadata.PackageNotFoundError:
        pass
    for ep in metadata.entry_points(group="fulmen.plugins"):
        if ep.dist is not None:
            out[ep.dist.name] = ep.dist.version
    return dict(sorted(out.items()))


def _interfaces() -> dict[str, Any]:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except (AttributeError, OSError):  # not on every platform
        names = []
    try:
        addresses = sorted({info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)})
    except OSError as exc:
        addresses = [f"hostname does not resolve: {exc}"]
    return {"interfaces": names, "host_addresses": addresses}


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def render(data: dict[str, Any]) -> str:
    """The report as text to paste into an issue."""
    t = data["torch"]
    lines = [f"fulmen doctor on {data['host']} ({data['platform']}, Python {data['python']})",
             "", "Versions:"]
    lines += [f"  {name} {version}" for name, version in data["versions"].items()]
    backends = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in t["backends"].items())
    lines += [f"  torch {t['version']}: CUDA {t['cuda'] or 'none'} "
              f"({'available' if t['cuda_available'] else 'not available'}, "
              f"{t['device_count']} devices), NCCL {t['nccl'] or 'none'}",
              f"  process-group backends: {backends}",
              "", f"CPU: {data['cpu']['cores']} cores, {data['cpu']['usable']} usable by this "
              f"process, torch uses {data['cpu']['torch_threads']} threads",
              "", "Cluster variables:"]
    lines += [f"  {k}={v}" for k, v in data["variables"].items()] or ["  (none set)"]
    detection = data["detection"]
    lines += ["", "Detection:"]
    for kind in ("environment", "accelerator"):
        answers = ", ".join(f"{a['plugin']}={a['answer']!r}" for a in detection.get(kind, []))
        lines.append(f"  {kind}: {answers or '(no detector)'}")
    auto = detection.get("auto")
    lines.append(f"  'auto' composes: {auto}" if auto else
                 f"  'auto' fails: {detection.get('auto_error')}")
    net = data["network"]
    port = data["main_port"]
    state = "free" if port["free"] else "IN USE (a stale run? set MASTER_PORT to a free port)"
    lines += ["", f"Network: interfaces {', '.join(net['interfaces']) or '(unknown)'}; "
              f"{data['host']} resolves to {', '.join(net['host_addresses'])}",
              f"Main port {port['port']}: {state}"]
    return "\n".join(lines)
