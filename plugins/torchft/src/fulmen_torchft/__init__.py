"""torchft for fulmen: the ``torchft`` strategy (``TorchFTStrategy``), its settings and the
Trainer callbacks ``StopAtCommittedSteps`` and ``ReplicaSchedulers``.
Importing this package imports neither torch nor torchft."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "TorchFTStrategy": "fulmen_torchft.strategy",
    "ReplicaSettings": "fulmen_torchft.settings",
    "StopAtCommittedSteps": "fulmen_torchft.callbacks",
    "ReplicaSchedulers": "fulmen_torchft.callbacks",
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
