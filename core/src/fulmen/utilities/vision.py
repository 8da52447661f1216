"""Lightning's ``get_torchvision_model``: a torchvision model by name."""

from __future__ import annotations

import importlib.util
from typing import Any

from fulmen.errors import MissingDependencyError

__all__ = ["get_torchvision_model"]


def get_torchvision_model(model_name: str, **kwargs: Any) -> Any:
    """``torchvision.models.get_model(model_name, **kwargs)`` (``"resnet18"``,
    ``weights=None``...); needs torchvision."""
    if importlib.util.find_spec("torchvision") is None:
        raise MissingDependencyError(f"get_torchvision_model({model_name!r}) needs torchvision, "
                                     "which is not installed: pip install torchvision",
                                     name="torchvision")
    from torchvision import models

    return models.get_model(model_name, **kwargs)
