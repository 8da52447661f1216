"""Lightning's collectives (``lightning.fabric.plugins.collectives``): an object that owns a
process group and runs collective operations on it. ``TorchCollective`` goes through
``torch.distributed``; ``SingleDeviceCollective`` is the one-process version (each operation
returns its input). fulmen's strategies run their own collectives
(``strategy.all_reduce``...); these are for code that manages groups itself."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["Collective", "SingleDeviceCollective", "TorchCollective"]


class Collective(ABC):
    """Collective operations on a group this object owns (``create_group``/``teardown``)."""

    def __init__(self) -> None:
        self._group: Any = None

    @property
    @abstractmethod
    def rank(self) -> int: ...

    @property
    @abstractmethod
    def world_size(self) -> int: ...

    @property
    def group(self) -> Any:
        if self._group is None:
            raise RuntimeError(f"`{type(self).__name__}` does not own a group. HINT: try "
                               "`collective.create_group().group`")
        return self._group

    @abstractmethod
    def broadcast(self, tensor: torch.Tensor, src: int) -> torch.Tensor: ...

    @abstractmethod
    def all_reduce(self, tensor: torch.Tensor, op: Any) -> torch.Tensor: ...

    @abstractmethod
    def reduce(self, tensor: torch.Tensor, dst: int, op: Any) -> torch.Tensor: ...

    @abstractmethod
    def all_gather(self, tensor_list: list[torch.Tensor], tensor: torch.Tensor
                   ) -> list[torch.Tensor]: ...

    @abstractmethod
    def gather(self, tensor: torch.Tensor, gather_list: list[torch.Tensor], dst: int = 0
               ) -> list[torch.Tensor]: ...

    @abstractmethod
    def scatter(self, tensor: torch.Tensor, scatter_list: list[torch.Tensor], src: int = 0
                ) -> torch.Tensor: ...

    @abstractmethod
    def reduce_scatter(self, output: torch.Tensor, input_list: list[torch.Tensor], op: Any
                       ) -> torch.Tensor: ...

    @abstractmethod
    def all_to_all(self, output_tensor_list: list[torch.Tensor],
                   input_tensor_list: list[torch.Tensor]) -> list[torch.Tensor]: ...

    @abstractmethod
    def send(self, tensor: torch.Tensor, dst: int, tag: int = 0) -> None: ...

    @abstractmethod
    def recv(self, tensor: torch.Tensor, src: int | None = None, tag: int = 0
             ) -> torch.Tensor: ...

    @abstractmethod
    def barrier(self, device_ids: list[int] | None = None) -> None: ...

    @classmethod
    @abstractmethod
    def is_available(cls) -> bool: ...

    @classmethod
    @abstractmethod
    def is_initialized(cls) -> bool: ...

    @classmethod
    @abstractmethod
    def init_group(cls, **kwargs: Any) -> None: ...

    @classmethod
    @abstractmethod
    def new_group(cls, **kwargs: Any) -> Any: ...

    @classmethod
    @abstractmethod
    def destroy_group(cls, group: Any) -> None: ...

    def setup(self, **kwargs: Any) -> Collective:
        """Initialize the default group (``init_group(**kwargs)``) unless it is."""
        if not self.is_initialized():
            self.init_group(**kwargs)
        return self

    def create_group(self, **kwargs: Any) -> Collective:
        """Own a new group (``new_group(**kwargs)``); the default group must exist."""
        if self._group is not None:
            raise RuntimeError(f"`{type(self).__name__}` already owns a group.")
        self._group = self.new_group(**kwargs)
        return self

    def teardown(self) -> Collective:
        """Destroy the owned group."""
        if self._group is None:
            raise RuntimeError(f"`{type(self).__name__}` does not own a group to destroy.")
        self.destroy_group(self._group)
        self._group = None
        return self


def _op(op: Any) -> Any:
    """``"sum"`` -> ``ReduceOp.SUM`` (a ``ReduceOp`` passes as it is)."""
    if not isinstance(op, str):
        return op
    value = getattr(dist.ReduceOp, op.upper(), None)
    if value is None:
        raise ValueError(f"op {op!r} is not a member of `ReduceOp`")
    return value


class TorchCollective(Collective):
    """Collectives through ``torch.distributed``; the group is the default (world) group
    unless ``create_group`` made one."""

    manages_default_group = False
    addr_key = "MASTER_ADDR"
    port_key = "MASTER_PORT"

    def __init__(self) -> None:
        if not dist.is_available():
            raise RuntimeError("Torch distributed is not available.")
        super().__init__()

    @property
    def group(self) -> Any:
        if self._group is None:
            self._group = dist.GroupMember.WORLD
        return super().group

    @property
    def rank(self) -> int:
        return dist.get_rank(self.group)

    @property
    def world_size(self) -> int:
        return dist.get_world_size(self.group)

    def broadcast(self, tensor: torch.Tensor, src: int) -> torch.Tensor:
        dist.broadcast(tensor, src, group=self.group)
        return tensor

    def all_reduce(self, tensor: torch.Tensor, op: Any = "sum") -> torch.Tensor:
        dist.all_reduce(tensor, op=_op(op), group=self.group)
        return tensor

    def reduce(self, tensor: torch.Tensor, dst: int, op: Any = "sum") -> torch.Tensor:
        dist.reduce(tensor, dst, op=_op(op), group=self.group)
        return tensor

    def all_gather(self, tensor_list: list[torch.Tensor], tensor: torch.Tensor
                   ) -> list[torch.Tensor]:
        dist.all_gather(tensor_list, tensor, group=self.group)
        return tensor_list

    def gather(self, tensor: torch.Tensor, gather_list: list[torch.Tensor], dst: int = 0
               ) -> list[torch.Tensor]:
        dist.gather(tensor, gather_list, dst, group=self.group)
        return gather_list

    def scatter(self, tensor: torch.Tensor, scatter_list: list[torch.Tensor], src: int = 0
                ) -> torch.Tensor:
        dist.scatter(tensor, scatter_list, src, group=self.group)
        return tensor

    def reduce_scatter(self, output: torch.Tensor, input_list: list[torch.Tensor],
                       op: Any = "sum") -> torch.Tensor:
        dist.reduce_scatter(output, input_list, op=_op(op), group=self.group)
        return output

    def all_to_all(self, output_tensor_list: list[torch.Tensor],
                   input_tensor_list: list[torch.Tensor]) -> list[torch.Tensor]:
        dist.all_to_all(output_tensor_list, input_tensor_list, group=self.group)
        return output_tensor_list

    def send(self, tensor: torch.Tensor, dst: int, tag: int = 0) -> None:
        dist.send(tensor, dst, tag=tag, group=self.group)

    def recv(self, tensor: torch.Tensor, src: int | None = None, tag: int = 0) -> torch.Tensor:
        dist.recv(tensor, src, tag=tag, group=self.group)
        return tensor

    def all_gather_object(self, object_list: list[Any], obj: Any) -> list[Any]:
        dist.all_gather_object(object_list, obj, group=self.group)
        return object_list

    def broadcast_object_list(self, object_list: list[Any], src: int,
                              device: torch.device | None = None) -> list[Any]:
        dist.broadcast_object_list(object_list, src, group=self.group, device=device)
        return object_list

    def gather_object(self, obj: Any, object_gather_list: list[Any], dst: int = 0) -> list[Any]:
        dist.gather_object(obj, object_gather_list, dst, group=self.group)
        return object_gather_list

    def scatter_object_list(self, scatter_object_output_list: list[Any],
                            scatter_object_input_list: list[Any], src: int = 0) -> list[Any]:
        dist.scatter_object_list(scatter_object_output_list, scatter_object_input_list, src,
                                 group=self.group)
        return scatter_object_output_list

    def barrier(self, device_ids: list[int] | None = None) -> None:
        if self.group == dist.GroupMember.NON_GROUP_MEMBER:
            return
        dist.barrier(group=self.group, device_ids=device_ids)

    def monitored_barrier(self, timeout: Any = None, wait_all_ranks: bool = False) -> None:
        dist.monitored_barrier(group=self.group, timeout=timeout, wait_all_ranks=wait_all_ranks)

    def setup(self, main_address: str | None = None, main_port: str | int | None = None,
              **kwargs: Any) -> TorchCollective:
        """Initialize the default group (``init_process_group(**kwargs)``), with
        ``MASTER_ADDR``/``MASTER_PORT`` set from the arguments for the call when unset."""
        if self.is_initialized():
            return self
        set_here = []
        for key, value in ((self.addr_key, main_address), (self.port_key, main_port)):
            if value is not None and key not in os.environ:
                os.environ[key] = str(value)
                set_here.append(key)
        super().setup(**kwargs)
        TorchCollective.manages_default_group = True
        for key in set_here:
            os.environ.pop(key, None)
        return self

    def teardown(self) -> TorchCollective:
        """Destroy the owned group, and the default group when ``setup`` created it."""
        member = self.group != dist.GroupMember.NON_GROUP_MEMBER
        owned = self._group
        super().teardown()
        default = dist.GroupMember.WORLD
        if member and TorchCollective.manages_default_group and default is not None:
            if owned is not default:
                self.destroy_group(default)
            TorchCollective.manages_default_group = False
        elif dist.GroupMember.WORLD is None:
            TorchCollective.manages_default_group = False
        return self

    @classmethod
    def is_available(cls) -> bool:
        return dist.is_available()

    @classmethod
    def is_initialized(cls) -> bool:
        return cls.is_available() and dist.is_initialized()

    @classmethod
    def init_group(cls, **kwargs: Any) -> None:
        dist.init_process_group(**kwargs)

    @classmethod
    def new_group(cls, **kwargs: Any) -> Any:
        return dist.new_group(**kwargs)

    @classmethod
    def destroy_group(cls, group: Any) -> None:
        if group is not None and group != dist.GroupMember.NON_GROUP_MEMBER and \
                dist.is_initialized():
            dist.destroy_process_group(group)


class SingleDeviceCollective(Collective):
    """One process: every operation returns its input (``all_gather`` a one-element list)."""

    @property
    def rank(self) -> int:
        return 0

    @property
    def world_size(self) -> int:
        return 1

    def broadcast(self, tensor: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        return tensor

    def all_reduce(self, tensor: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        return tensor

    def reduce(self, tensor: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        return tensor

    def all_gather(self, tensor_list: list[torch.Tensor], tensor: torch.Tensor, **__: Any
                   ) -> list[torch.Tensor]:
        return [tensor]

    def gather(self, tensor: torch.Tensor, *_: Any, **__: Any) -> list[torch.Tensor]:
        return [tensor]

    def scatter(self, tensor: torch.Tensor, scatter_list: list[torch.Tensor], *_: Any,
                **__: Any) -> torch.Tensor:
        return scatter_list[0]

    def reduce_scatter(self, output: torch.Tensor, input_list: list[torch.Tensor], *_: Any,
                       **__: Any) -> torch.Tensor:
        return input_list[0]

    def all_to_all(self, output_tensor_list: list[torch.Tensor],
                   input_tensor_list: list[torch.Tensor], *_: Any, **__: Any
                   ) -> list[torch.Tensor]:
        return input_tensor_list

    def send(self, *_: Any, **__: Any) -> None:
        pass

    def recv(self, tensor: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        return tensor

    def barrier(self, *_: Any, **__: Any) -> None:
        pass

    @classmethod
    def is_available(cls) -> bool:
        return True

    @classmethod
    def is_initialized(cls) -> bool:
        return True

    @classmethod
    def init_group(cls, **_: Any) -> None:
        pass

    @classmethod
    def new_group(cls, **_: Any) -> Any:
        return object()

    @classmethod
    def destroy_group(cls, group: Any) -> None:
        pass
