"""Lightning's ``lightning.pytorch.utilities.memory``: telling out-of-memory errors apart,
freeing cached CUDA memory, and detaching the tensors of a collection."""

from __future__ import annotations

import gc
from typing import Any

from fulmen.tuner.batch_size_scaling import is_oom_error
from fulmen.utilities.apply_func import apply_to_collection

__all__ = ["garbage_collection_cuda", "is_cuda_out_of_memory", "is_cudnn_snafu", "is_oom_error",
           "is_out_of_cpu_memory", "recursive_detach"]


def recursive_detach(in_dict: Any, to_cpu: bool = False) -> Any:
    """``in_dict`` with every tensor detached (and moved to the CPU with ``to_cpu``)."""
    import torch

    def detach(tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.detach()
        return tensor.cpu() if to_cpu else tensor

    return apply_to_collection(in_dict, torch.Tensor, detach)


def _single_message(exception: BaseException) -> str | None:
    if isinstance(exception, RuntimeError) and len(exception.args) == 1 and \
            isinstance(exception.args[0], str):
        return exception.args[0]
    return None


def is_cuda_out_of_memory(exception: BaseException) -> bool:
    """A CUDA out-of-memory RuntimeError."""
    message = _single_message(exception)
    return message is not None and "CUDA" in message and "out of memory" in message


def is_cudnn_snafu(exception: BaseException) -> bool:
    """cuDNN's ``CUDNN_STATUS_NOT_SUPPORTED`` (pytorch/pytorch#4107), a hidden out-of-memory."""
    message = _single_message(exception)
    return message is not None and "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED." in message


def is_out_of_cpu_memory(exception: BaseException) -> bool:
    """The CPU allocator's out-of-memory RuntimeError."""
    message = _single_message(exception)
    return message is not None and "DefaultCPUAllocator: can't allocate memory" in message


def garbage_collection_cuda() -> None:
    """Collect garbage and empty the CUDA cache (an out-of-memory error while doing so is
    ignored)."""
    import torch

    gc.collect()
    try:
        torch.cuda.empty_cache()
    except RuntimeError as exception:
        if not is_oom_error(exception):
            raise
