"""Lightning's ``lightning.fabric.utilities.device_parser``: parsing the ``devices=`` argument
into GPU indices (``_parse_gpu_ids``) and its checks, which accelerator plugins written for
Lightning call from their ``parse_devices`` (nequip's XPU accelerator). Same rules and messages
as Lightning 2.6; the available GPUs are fulmen's CUDA / MPS accelerators'."""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import Any

from fulmen.errors import ConfigurationError

__all__ = ["check_data_type", "check_unique", "determine_root_gpu_device",
           "get_all_available_gpus", "normalize_parse_gpu_input_to_list",
           "normalize_parse_gpu_string_input", "parse_gpu_ids", "sanitize_gpu_ids",
           "select_auto_accelerator"]


def determine_root_gpu_device(gpus: list[Any] | None) -> Any:
    """The first of ``gpus`` (None for None)."""
    if gpus is None:
        return None
    if not isinstance(gpus, list):
        raise TypeError("GPUs should be a list")
    assert len(gpus) > 0, "GPUs should be a non-empty list"
    return gpus[0]


def parse_gpu_ids(gpus: int | str | list[int] | None, include_cuda: bool = False,
                  include_mps: bool = False) -> list[int] | None:
    """``devices=`` as GPU indices: ``-1`` / ``"-1"`` all, ``N`` the first N, a list or
    ``"0,2"`` those; ``0``, ``"0"``, ``[]`` and None no GPU (None)."""
    import torch

    check_data_type(gpus)
    if gpus is None or (isinstance(gpus, int) and gpus == 0) or str(gpus).strip() in ("0", "[]"):
        return None
    ids = normalize_parse_gpu_input_to_list(normalize_parse_gpu_string_input(gpus),
                                            include_cuda=include_cuda, include_mps=include_mps)
    if not ids:
        raise ConfigurationError("GPUs requested but none are available.")
    if (torch.distributed.is_available() and torch.distributed.is_torchelastic_launched()
            and len(ids) != 1
            and len(get_all_available_gpus(include_cuda=include_cuda, include_mps=include_mps))
            == 1):
        return ids  # torchelastic shows one visible GPU per process
    check_unique(ids)
    return sanitize_gpu_ids(ids, include_cuda=include_cuda, include_mps=include_mps)


def normalize_parse_gpu_string_input(s: int | str | list[int]) -> int | list[int]:
    """``"-1"`` -> -1, ``"0,1"`` -> [0, 1], ``"2"`` -> 2; anything else as given."""
    if not isinstance(s, str):
        return s
    if s == "-1":
        return -1
    if "," in s:
        return [int(x.strip()) for x in s.split(",") if len(x) > 0]
    return int(s.strip())


def sanitize_gpu_ids(gpus: list[int], include_cuda: bool = False,
                     include_mps: bool = False) -> list[int]:
    """``gpus`` when every index is an available GPU, else a ConfigurationError."""
    if sum((include_cuda, include_mps)) == 0:
        raise ValueError("At least one gpu type should be specified!")
    available = get_all_available_gpus(include_cuda=include_cuda, include_mps=include_mps)
    for gpu in gpus:
        if gpu not in available:
            raise ConfigurationError(
                f"You requested gpu: {gpus}\n But your machine only has: {available}")
    return gpus


def normalize_parse_gpu_input_to_list(gpus: int | list[int] | tuple[int, ...],
                                      include_cuda: bool, include_mps: bool) -> list[int] | None:
    """A sequence as a list, ``0`` None, ``-1`` every available GPU, ``N`` ``[0..N)``."""
    assert gpus is not None
    if isinstance(gpus, MutableSequence | tuple):
        return list(gpus)
    if not gpus:
        return None
    if gpus == -1:
        return get_all_available_gpus(include_cuda=include_cuda, include_mps=include_mps)
    return list(range(gpus))


def get_all_available_gpus(include_cuda: bool = False, include_mps: bool = False) -> list[int]:
    """The indices of the visible CUDA devices and / or the MPS device."""
    from fulmen_accelerators import CUDAAccelerator, MPSAccelerator

    cuda = list(range(CUDAAccelerator.auto_device_count())) \
        if include_cuda and CUDAAccelerator.is_available() else []
    mps = [0] if include_mps and MPSAccelerator.is_available() else []
    return cuda + mps


def check_unique(device_ids: list[int]) -> None:
    """A ConfigurationError when an index is repeated."""
    if len(device_ids) != len(set(device_ids)):
        raise ConfigurationError("Device ID's (GPU) must be unique.")


def check_data_type(device_ids: object) -> None:
    """A TypeError unless ``device_ids`` is an int, a str or a sequence of ints."""
    msg = "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but you passed"
    if device_ids is None:
        raise TypeError(f"{msg} None")
    if isinstance(device_ids, MutableSequence | tuple):
        for id_ in device_ids:
            if type(id_) is not int:  # isinstance(False, int) is True
                raise TypeError(f"{msg} a sequence of {type(id_).__name__}.")
    elif type(device_ids) not in (int, str):
        raise TypeError(f"{msg} {device_ids!r}.")


def select_auto_accelerator() -> str:
    """``accelerator="auto"`` as Lightning picks it: MPS, else CUDA, else CPU (no TPUs)."""
    from fulmen_accelerators import CUDAAccelerator, MPSAccelerator

    if MPSAccelerator.is_available():
        return "mps"
    if CUDAAccelerator.is_available():
        return "cuda"
    return "cpu"
