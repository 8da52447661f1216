"""The CUDA tier: every test here needs a CUDA GPU and is skipped where there is none.

``make test-gpu`` runs this folder (and the other tests marked ``gpu``); ``make test`` collects it
too, where each test is reported as skipped. ``tools/device-check.sh`` runs it on a lent GPU."""

from __future__ import annotations

import os

import pytest
import torch

#: ``FULMEN_GPU_TIER_DEVICE=cpu`` (the device script's ``--dry-run``) runs the tier on the CPU.
RUNNABLE = torch.cuda.is_available() or os.environ.get("FULMEN_GPU_TIER_DEVICE") == "cpu"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if item.path.is_relative_to(config.rootpath / "tests" / "gpu"):
            item.add_marker(pytest.mark.gpu)
            if not RUNNABLE:
                item.add_marker(skip)
