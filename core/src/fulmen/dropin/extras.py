"""Small Lightning names that scripts import and fulmen has no other home for:
``cli_lightning_logo`` (Lightning's examples print it first) and the availability flags of
``lightning.pytorch.utilities.imports``."""

from __future__ import annotations

from lightning_utilities.core.imports import RequirementCache

__all__ = ["_OMEGACONF_AVAILABLE", "_RICH_AVAILABLE", "_TORCHVISION_AVAILABLE",
           "_TORCHMETRICS_AVAILABLE", "cli_lightning_logo"]

_TORCHVISION_AVAILABLE = RequirementCache("torchvision")
_RICH_AVAILABLE = RequirementCache("rich")
_OMEGACONF_AVAILABLE = RequirementCache("omegaconf")
_TORCHMETRICS_AVAILABLE = RequirementCache("torchmetrics")


def cli_lightning_logo() -> None:
    """Lightning prints its ASCII logo; under fulmen, one line saying what runs the script."""
    import fulmen

    print(f"\n fulmen {fulmen.__version__} (running a Lightning script)\n")
