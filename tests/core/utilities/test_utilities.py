"""``fulmen.utilities``: the helpers Lightning users import from ``lightning.pytorch.utilities``."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import torch

from fulmen.utilities import AttributeDict, apply_to_collection, move_data_to_device


@dataclasses.dataclass
class Batch:
    x: torch.Tensor
    label: str


def test_apply_to_collection_and_move_data_to_device_walk_nested_collections():
    Pair = namedtuple("Pair", "a b")
    batch = {"pair": Pair(torch.ones(2), [torch.zeros(1), 3]), "item": Batch(torch.ones(1), "x")}
    doubled = apply_to_collection(batch, torch.Tensor, lambda t: t * 2)
    assert isinstance(doubled["pair"], Pair)
    assert torch.equal(doubled["pair"].a, torch.full((2,), 2.0))
    assert doubled["pair"].b[1] == 3 and doubled["item"].label == "x"
    moved = move_data_to_device({"m": torch.nn.Linear(1, 1), "t": torch.ones(1)}, "meta")
    assert moved["t"].device.type == "meta" and moved["m"].weight.device.type == "meta"


def test_attribute_dict():
    params = AttributeDict(lr=0.1)
    params.batch_size = 8
    assert params["batch_size"] == 8 and params.lr == 0.1


def test_fulmen_utilities_is_reachable_from_fulmen_without_torch():
    import subprocess
    import sys

    code = ("import sys, fulmen\n"
            "print(fulmen.utilities.rank_zero_only.__name__, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.split() == ["rank_zero_only", "False"]
