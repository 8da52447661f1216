"""MLflow for fulmen: ``MLFlowLogger`` (Lightning's name and arguments), the ``mlflow`` logger.
Importing this package imports neither torch nor the tracker's library."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {"MLFlowLogger": "fulmen_mlflow.logger"}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
