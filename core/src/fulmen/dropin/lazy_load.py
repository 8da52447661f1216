"""Lightning's ``lightning.fabric.utilities.load._lazy_load``: opens a ``torch.save`` checkpoint
without reading its tensors. Each tensor comes back as a :class:`NotYetLoadedTensor` (dtype,
shape... from a meta tensor) that reads its storage from the file on first real use (any torch
function, ``.to()``, ``.contiguous()``...), so converting a large checkpoint holds one tensor
at a time (litgpt's checkpoint conversion scripts). Same behaviour as Lightning 2.6."""

from __future__ import annotations

import os
import pickle
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from io import BytesIO
from typing import IO, Any

import torch
from torch import Tensor
from torch.nn import Parameter

from fulmen.utilities.apply_func import apply_to_collection

__all__ = ["LazyLoadingUnpickler", "NotYetLoadedTensor", "lazy_load", "materialize_tensors"]

_META_ATTRIBUTES = {"dtype", "grad", "grad_fn", "is_meta", "layout", "names", "ndim",
                    "output_nr", "requires_grad", "retains_grad", "size", "shape", "volatile"}
_LOADING_ATTRIBUTES = {"contiguous", "cuda", "half", "data", "to"}


class NotYetLoadedTensor:
    """A tensor of a lazily opened checkpoint; ``_load_tensor()`` reads it (Lightning's name)."""

    def __init__(self, metatensor: Tensor, archiveinfo: LazyLoadingUnpickler,
                 storageinfo: tuple[Any, ...], rebuild_args: tuple[Any, ...]) -> None:
        self.metatensor = metatensor
        self.archiveinfo = archiveinfo
        self.storageinfo = storageinfo
        self.rebuild_args = rebuild_args

    @classmethod
    def rebuild_from_type_v2(cls, func: Callable[..., Any], new_type: Any, args: tuple[Any, ...],
                             state: dict[str, Any], *,
                             archiveinfo: LazyLoadingUnpickler | None = None) -> Any:
        ret = func(*args)
        if isinstance(ret, NotYetLoadedTensor):
            old_lt = ret._load_tensor

            def _load_tensor() -> Any:
                t = old_lt()
                return torch._tensor._rebuild_from_type_v2(lambda: t, new_type, (), state)

            ret._load_tensor = _load_tensor  # type: ignore[method-assign]
            return ret
        return torch._tensor._rebuild_from_type_v2(func, new_type, args, state)

    @classmethod
    def rebuild_parameter(cls, data: Any, requires_grad: bool,
                          backward_hooks: OrderedDict[Any, Any],
                          *, archiveinfo: LazyLoadingUnpickler | None = None) -> Any:
        if isinstance(data, NotYetLoadedTensor):
            old_lt = data._load_tensor

            def _load_tensor() -> Parameter:
                t = old_lt()
                return torch._utils._rebuild_parameter(t, requires_grad, backward_hooks)

            data._load_tensor = _load_tensor  # type: ignore[method-assign]
            return data
        return torch._utils._rebuild_parameter(data, requires_grad, backward_hooks)

    @classmethod
    def rebuild_tensor_v2(cls, storage: Any, storage_offset: int, size: tuple[int, ...],
                          stride: tuple[int, ...], requires_grad: bool,
                          backward_hooks: OrderedDict[Any, Any], metadata: Any = None, *,
                          archiveinfo: LazyLoadingUnpickler) -> NotYetLoadedTensor:
        rebuild_args = (storage_offset, size, stride, requires_grad, backward_hooks, metadata)
        metatensor = torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
                                                     requires_grad, backward_hooks, metadata)
        return NotYetLoadedTensor(metatensor, archiveinfo, storage.archiveinfo, rebuild_args)

    def _load_tensor(self) -> Tensor:
        """Read this tensor from the checkpoint file."""
        from torch.storage import TypedStorage, UntypedStorage

        _, _, fn, _, size = self.storageinfo
        dtype = self.metatensor.dtype
        storage = self.archiveinfo.file_reader.get_storage_from_record(
            f"data/{fn}", size * torch._utils._element_size(dtype), UntypedStorage)
        uts = storage._typed_storage()._untyped_storage
        with warnings.catch_warnings():  # TypedStorage is deprecated in torch
            warnings.simplefilter("ignore")
            typed = TypedStorage(wrap_storage=uts, dtype=dtype, _internal=True)
        return torch._utils._rebuild_tensor_v2(typed, *self.rebuild_args)

    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Sequence[Any],
                           args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> Any:
        loaded = [a._load_tensor() if isinstance(a, NotYetLoadedTensor) else a for a in args]
        return func(*loaded, **(kwargs or {}))

    @property
    def device(self) -> torch.device:
        return torch.device(self.storageinfo[3])

    def __getattr__(self, name: str) -> Any:
        if name in _META_ATTRIBUTES:
            return getattr(self.metatensor, name)
        if name in _LOADING_ATTRIBUTES:
            return getattr(self._load_tensor(), name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.metatensor!r})"


class LazyLoadingUnpickler(pickle.Unpickler):
    """Unpickles a checkpoint's ``data.pkl`` with meta storages and lazy tensors."""

    def __init__(self, file: IO[bytes], file_reader: Any) -> None:
        super().__init__(file)
        self.file_reader = file_reader

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return partial(NotYetLoadedTensor.rebuild_tensor_v2, archiveinfo=self)
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return partial(NotYetLoadedTensor.rebuild_from_type_v2, archiveinfo=self)
        if module == "torch._utils" and name == "_rebuild_parameter":
            return partial(NotYetLoadedTensor.rebuild_parameter, archiveinfo=self)
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        from torch.storage import TypedStorage

        _, cls, _, _, _ = pid
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            storage = TypedStorage(dtype=cls().dtype, device="meta")
        storage.archiveinfo = pid  # type: ignore[attr-defined]
        return storage


def lazy_load(filename: str | os.PathLike[str]) -> Any:
    """The object ``torch.save`` wrote to ``filename``, its tensors not yet read."""
    if not os.path.isfile(filename):
        raise FileNotFoundError(f"Path {str(filename)!r} does not exist or is not a file.")
    file_reader = torch.PyTorchFileReader(str(filename))
    with BytesIO(file_reader.get_record("data.pkl")) as pkl:
        return LazyLoadingUnpickler(pkl, file_reader).load()


def materialize_tensors(collection: Any) -> Any:
    """``collection`` with every :class:`NotYetLoadedTensor` read."""
    return apply_to_collection(collection, dtype=NotYetLoadedTensor,
                               function=lambda t: t._load_tensor())
