"""The ``torch_accelerator`` plugin: any device type torch exposes through ``torch.accelerator``
(xpu, hpu, a vendor's PrivateUse1 backend...) is selectable by its name.

The record set is computed from torch when the catalog is built, and only when torch is
already imported (a Trainer or Lite imports it; so does the vendor package that registers its
device type): ``import fulmen`` and ``fulmen plugins`` stay free of torch. The records are
fallbacks (``fallback=True``): a device type another plugin registers (``cpu``, ``cuda``,
``mps``) keeps that plugin, so no name is registered twice. Each record names torch's default
distributed backend for its device type, so the ddp family, fsdp and model_parallel run on it
when the vendor registered one (``torch.distributed.Backend.register_backend(..., devices=[...])``)
before the first Trainer or Lite was built.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from fulmen import AcceleratorSpec, hookimpl

TARGET = "fulmen_accelerators.generic.accelerator:TorchAccelerator"


def device_types() -> list[str]:
    """The device types torch exposes through ``torch.accelerator`` in this process (its build's
    accelerator, or a registered PrivateUse1 backend); none while torch is not imported."""
    accelerator = sys.modules.get("torch.accelerator")  # None while torch is not imported
    if accelerator is None:
        return []
    current = accelerator.current_accelerator()
    return [] if current is None else [current.type]


def distributed_backend(device_type: str) -> str:
    """torch.distributed's default backend for ``device_type`` (``""``: none registered yet)."""
    import torch.distributed as dist

    if not dist.is_available():
        return ""
    return str(dist.Backend.default_device_backend_map.get(device_type, ""))


@hookimpl
def fulmen_accelerators() -> Iterator[AcceleratorSpec]:
    for device_type in device_types():
        yield AcceleratorSpec(
            name=device_type,
            target=TARGET,
            device_type=device_type,
            distributed_backend=distributed_backend(device_type),
            init_kwargs={"device_type": device_type},
            fallback=True,
            description=f"{device_type} devices through torch.accelerator (generic plugin)",
        )
