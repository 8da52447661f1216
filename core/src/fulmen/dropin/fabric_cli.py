"""Lightning's ``lightning.fabric.cli.main(args, script_args)`` (what ``fabric run`` calls)
under fulmen: the settings become ``LT_*`` variables, which ``Lite``/``Fabric`` reads as Fabric
does (:mod:`fulmen.dropin.fabric_env`), and ``torchrun`` starts the script's processes under
``fulmen run``."""

from __future__ import annotations

import os
from argparse import Namespace

__all__ = ["main", "num_processes"]


def num_processes(accelerator: str | None, devices: str) -> int:
    """How many processes ``devices`` asks for on this machine (``"auto"``: one)."""
    if devices in ("auto", "-1") and accelerator in (None, "auto", "cpu"):
        return 1 if devices == "auto" else max(1, os.cpu_count() or 1)
    if str(devices).isdigit():
        return int(devices)
    if accelerator == "tpu":
        raise ValueError("Launching processes for TPU through the CLI is not supported.")
    parts = [p for p in str(devices).strip("[]").split(",") if p.strip()]
    if not parts:
        raise ValueError(f"devices={devices!r}: give a number of devices or a list of indices")
    return len(parts)


def main(args: Namespace, script_args: list[str] | None = None) -> None:
    """Set ``LT_ACCELERATOR``, ``LT_STRATEGY``, ``LT_DEVICES``, ``LT_NUM_NODES``,
    ``LT_PRECISION`` (and ``LT_CLI_USED=1``) from ``args`` and run ``args.script`` with
    ``script_args`` in ``num_processes`` processes through ``torchrun -m fulmen run``. ``args``
    has Fabric's CLI fields: script, accelerator, strategy, devices, num_nodes, node_rank,
    main_address, main_port, precision."""
    import torch.distributed.run as torchrun

    os.environ["LT_CLI_USED"] = "1"
    for name in ("accelerator", "strategy", "precision"):
        value = getattr(args, name, None)
        if value is not None:
            os.environ[f"LT_{name.upper()}"] = str(value)
    os.environ["LT_DEVICES"] = str(args.devices)
    os.environ["LT_NUM_NODES"] = str(args.num_nodes)
    processes = 1 if args.strategy == "dp" else num_processes(args.accelerator, str(args.devices))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torchrun.main([f"--nproc_per_node={processes}", f"--nnodes={args.num_nodes}",
                   f"--node_rank={args.node_rank}", f"--master_addr={args.main_address}",
                   f"--master_port={args.main_port}", "-m", "fulmen", "run", args.script,
                   *(script_args or [])])
