"""The user's opt-out of weights-only loading is honoured as Lightning 2.6 honours it: Lightning
passes ``weights_only`` (default None) to ``torch.load``, so ``weights_only=False`` given to
``trainer.fit/validate/test/predict``, ``load_from_checkpoint`` or ``Fabric.load`` unpickles the
file fully, and so does torch's ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` when ``weights_only`` is not
given (``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` makes every load safe). fulmen's checks (checksums,
readable file) still run; only the unpickler changes.

Ported: ``tests_fabric/test_fabric.py::test_fabric_load_accepts_weights_only_false``. Lightning's
``test_fabric_load_forwards_weights_only_to_strategy`` replaces the strategy's
``load_checkpoint`` with a Mock; here the effect is observed on a file that only a full
unpickler reads.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.errors import UnsafeCheckpointError


class Payload:
    """A Python object that torch's safe unpickler refuses (it is on no allow-list)."""

    def __init__(self, value: int) -> None:
        self.value = value


class StateDict(dict):  # type: ignore[type-arg]
    """A state dict in a class of the user's own."""


class CarriesPayload(BoringModel):
    """Saves a ``Payload`` in its checkpoints and records what it gets back."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: Any = None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["payload"] = Payload(7)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.loaded = checkpoint["payload"]


def _trainer(tmp_path: Path, **kwargs: Any) -> fulmen.Trainer:
    flags: dict[str, Any] = dict(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                                 limit_val_batches=2, limit_test_batches=2, logger=False,
                                 enable_progress_bar=False, enable_model_summary=False,
                                 enable_checkpointing=False)
    flags.update(kwargs)
    return fulmen.Trainer(**flags)


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    trainer = _trainer(tmp_path)
    trainer.fit(CarriesPayload())
    path = tmp_path / "payload.ckpt"
    trainer.save_checkpoint(path)
    return path


def test_safe_by_default(checkpoint, tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    with pytest.raises(UnsafeCheckpointError, match="Payload"):
        CarriesPayload.load_from_checkpoint(checkpoint)
    with pytest.raises(UnsafeCheckpointError, match="Payload"):
        _trainer(tmp_path, max_epochs=2).fit(CarriesPayload(), ckpt_path=checkpoint)


def test_weights_only_false_is_honoured_everywhere(checkpoint, tmp_path):
    model = CarriesPayload.load_from_checkpoint(checkpoint, weights_only=False)
    assert model.loaded.value == 7
    model = CarriesPayload()
    trainer = _trainer(tmp_path, max_epochs=2)
    trainer.fit(model, ckpt_path=checkpoint, weights_only=False)
    assert model.loaded.value == 7 and trainer.current_epoch == 2
    for stage in ("validate", "test"):
        model = CarriesPayload()
        getattr(_trainer(tmp_path), stage)(model, ckpt_path=checkpoint, weights_only=False,
                                           verbose=False)
        assert model.loaded.value == 7
    model = CarriesPayload()
    _trainer(tmp_path).predict(model, ckpt_path=checkpoint, weights_only=False)
    assert model.loaded.value == 7


def test_torch_force_no_weights_only_load_is_the_users_opt_out(checkpoint, tmp_path,
                                                               monkeypatch):
    """With the variable set and ``weights_only`` not given, torch.load unpickles fully: so
    does fulmen (with torch's warning); an explicit ``weights_only=True`` still loads safely."""
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set"):
        model = CarriesPayload.load_from_checkpoint(checkpoint)
    assert model.loaded.value == 7
    model = CarriesPayload()
    _trainer(tmp_path, max_epochs=2).fit(model, ckpt_path=checkpoint)
    assert model.loaded.value == 7
    with pytest.raises(UnsafeCheckpointError, match="Payload"):
        CarriesPayload.load_from_checkpoint(checkpoint, weights_only=True)


def test_torch_force_weights_only_load_wins(checkpoint, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(UnsafeCheckpointError, match="Payload"):
        CarriesPayload.load_from_checkpoint(checkpoint, weights_only=False)


def test_lite_load_accepts_weights_only_false(tmp_path):
    """Lightning's test_fabric_load_accepts_weights_only_false, and a file only a full unpickler
    reads, through ``load`` and ``load_raw``."""
    lite = fulmen.Lite(accelerator="cpu")
    path = tmp_path / "ckpt.pt"
    torch.save({"foo": 123}, path)
    assert lite.load(path, weights_only=False)["foo"] == 123

    torch.save({"payload": Payload(3)}, path)
    with pytest.raises(UnsafeCheckpointError, match="Payload"):
        lite.load(path)
    assert lite.load(path, weights_only=False)["payload"].value == 3

    model = torch.nn.Linear(2, 2)
    state = {k: torch.full_like(v, 5.0) for k, v in model.state_dict().items()}
    torch.save(StateDict(state), path)  # a dict subclass: refused by default
    with pytest.raises(UnsafeCheckpointError):
        lite.load_raw(path, model)
    lite.load_raw(path, model, weights_only=False)
    assert torch.equal(model.weight, torch.full((2, 2), 5.0))


def test_lite_load_honours_the_environment_opt_out(tmp_path, monkeypatch):
    lite = fulmen.Lite(accelerator="cpu")
    path = tmp_path / "ckpt.pt"
    torch.save({"payload": Payload(3)}, path)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the warning, once per process, is tested above)
        assert lite.load(path)["payload"].value == 3
