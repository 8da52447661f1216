"""Lightning's ``ServableModule`` (``lightning.pytorch.serve``): the interface a module
implements to be served: how a request's payload is read and deserialized, the step that
answers it, and the expected response. ``ServableModuleValidator`` (Lightning's check that
starts a server during fit) has no fulmen counterpart (:mod:`fulmen.dropin.unavailable`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["ServableModule"]


class ServableModule(ABC, torch.nn.Module):
    """Mix into a module to serve it: implement the four methods below."""

    @abstractmethod
    def configure_payload(self) -> dict[str, Any]:
        """An example request payload (``{"body": {...}}``)."""

    @abstractmethod
    def configure_serialization(self) -> tuple[dict[str, Callable[..., Any]],
                                               dict[str, Callable[..., Any]]]:
        """The deserializers (payload key -> function to tensors) and serializers (output key
        -> function to JSON-able values)."""

    @abstractmethod
    def serve_step(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> dict[str, torch.Tensor]:
        """The answer to one deserialized request."""

    @abstractmethod
    def configure_response(self) -> dict[str, Any]:
        """The response expected for :meth:`configure_payload`'s payload."""
