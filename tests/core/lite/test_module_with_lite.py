"""A ``fulmen.Module`` set up by ``Lite``, as a ``LightningModule`` set up by Fabric: ported from
Lightning's ``tests/tests_pytorch/core/test_lightning_module.py`` (``test_fabric_*``,
``test_grad_clipping_lm_fabric``), with fulmen's names (``Fabric`` -> ``Lite``,
``module.fabric`` -> ``module.lite``, which ``module.fabric`` also reads).

Deliberate differences, also in docs/migrating.md:
- Lightning's tests log through ``Mock()`` loggers; fulmen's ``Lite`` takes ``fulmen`` loggers,
  so a small recording logger stands in, and ``Lite.log_dict`` hands the logger numbers (a
  scalar tensor becomes its ``item()``) at Lite's own step counter rather than ``step=None``.
- ``module.logger`` without a logger is None (Fabric's ``logger`` raises ``IndexError``), as
  ``Module.logger`` under a Trainer.
- ``module.global_rank`` / ``local_rank`` are the Lite's (Lightning returns 0 under Fabric).
- ``module.lite`` is the Lite itself (a weak reference that reads None once the Lite is gone;
  Lightning keeps a ``weakref.proxy``, which raises ``ReferenceError`` then); what ``setup``
  returned keeps its Lite alive.
- Wrong values are a ``ConfigurationError`` (a ``ValueError``, which Lightning raises).
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch

import fulmen
from fulmen.api.logger import Logger
from fulmen.demos.boring_classes import BoringModel
from fulmen.module import LiteTrainerShim


class Recording(Logger):
    """Keeps what it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.metrics: list[dict[str, float]] = []

    @property
    def name(self) -> str:
        return "recording"

    @property
    def version(self) -> int:
        return 0

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.metrics.append(dict(metrics))

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        pass


def test_lite_reference_recursively():
    ensemble = fulmen.Module()
    inner = fulmen.Module()
    ensemble.inner = inner
    assert inner.lite is None
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    ensemble.lite = lite
    assert ensemble.lite is inner.lite  # references match
    assert inner.lite is lite
    del lite
    gc.collect()
    assert inner.lite is None and ensemble.lite is None  # the Lite was weakly referenced
    assert inner.fabric is inner.lite  # Lightning's name


def test_lite_attributes():
    module = BoringModel()
    optimizer = module.configure_optimizers()[0][0]
    assert module.lite is None
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    wrapped_module, wrapped_optimizer = lite.setup(module, optimizer)
    assert wrapped_module.lite is lite
    assert wrapped_module.lite_optimizers == [wrapped_optimizer]

    # attribute access on Module.trainer is redirected to the Lite
    assert isinstance(wrapped_module.trainer, LiteTrainerShim)
    assert wrapped_module.trainer.global_rank == 0
    with pytest.raises(AttributeError, match=r"Your LightningModule code tried to access "
                                             r"`self\.trainer\.current_epoch`"):
        _ = wrapped_module.trainer.current_epoch
    assert wrapped_module.optimizers() is wrapped_optimizer


def test_lite_logger_access():
    module = BoringModel()
    wrapped_module = fulmen.Lite(accelerator="cpu", devices=1).setup(module)
    assert wrapped_module.loggers == []
    assert wrapped_module.logger is None  # Fabric: IndexError

    logger = Recording()
    wrapped_module = fulmen.Lite(accelerator="cpu", devices=1, loggers=logger).setup(
        BoringModel())
    assert wrapped_module.logger is logger
    assert wrapped_module.loggers == [logger]

    first, second = Recording(), Recording()
    wrapped_module = fulmen.Lite(accelerator="cpu", devices=1, loggers=[first, second]).setup(
        BoringModel())
    assert wrapped_module.logger is first
    assert wrapped_module.loggers == [first, second]


def test_lite_log():
    logger = Recording()
    wrapped_module = fulmen.Lite(accelerator="cpu", devices=1, loggers=[logger]).setup(
        BoringModel())
    with pytest.raises(ValueError, match="`list` values cannot be logged"):
        wrapped_module.log("invalid", [])
    wrapped_module.log("int", 1)
    wrapped_module.log("float", 0.1)
    wrapped_module.log("tensor", torch.tensor(0.5))
    assert logger.metrics == [{"int": 1}, {"float": 0.1}, {"tensor": 0.5}]
    logger.metrics.clear()
    wrapped_module.log("nothing", 1, logger=False)
    assert logger.metrics == []


def test_lite_log_dict():
    logger = Recording()
    wrapped_module = fulmen.Lite(accelerator="cpu", devices=1, loggers=[logger]).setup(
        BoringModel())
    with pytest.raises(ValueError, match="`list` values cannot be logged"):
        wrapped_module.log_dict({"invalid": [1, 2, 3]})
    with pytest.raises(ValueError, match="nested dictionaries cannot be logged"):
        wrapped_module.log_dict({"nested": {"nested": 1}})
    wrapped_module.log_dict({"int": 1, "float": 0.1, "tensor": torch.tensor(0.5)})
    assert logger.metrics == [{"int": 1, "float": 0.1, "tensor": 0.5}]  # one call
    logger.metrics.clear()
    wrapped_module.log_dict({"nothing": 1}, logger=False)
    assert logger.metrics == []


@pytest.mark.parametrize("algo", ["value", "norm"])
def test_grad_clipping_through_lite(algo):
    """``clip_gradients`` goes to ``lite.clip_gradients`` (Lightning replaces
    ``fabric.clip_gradients`` with a Mock; here the clipped gradients are checked)."""
    torch.manual_seed(0)
    module = BoringModel()
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    model, optimizer = lite.setup(module, torch.optim.SGD(module.parameters(), lr=0.1))
    lite.backward(model(torch.randn(4, 32)).pow(2).sum() * 1000)
    model.clip_gradients(optimizer, gradient_clip_val=1e-3, gradient_clip_algorithm=algo)
    grads = torch.cat([p.grad.flatten() for p in module.parameters()])
    if algo == "value":
        assert grads.abs().max() <= 1e-3 + 1e-9
    else:
        assert grads.norm() <= 1e-3 * (1 + 1e-4)


def test_a_training_loop_with_module_methods():
    """What a Fabric script written around a LightningModule does: ``training_step`` logs,
    the loop calls ``manual_backward`` and steps ``self.optimizers()``; ``lite.call`` reaches
    the module's hooks; the ranks are the Lite's."""
    logger = Recording()

    class Manual(BoringModel):
        def __init__(self) -> None:
            super().__init__()
            self.started = 0

        def on_train_start(self) -> None:
            self.started += 1

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            optimizer = self.optimizers()
            loss = self(batch).pow(2).mean()
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            self.log("loss", loss)
            return loss

    torch.manual_seed(0)
    module = Manual()
    lite = fulmen.Lite(accelerator="cpu", devices=1, loggers=[logger])
    model, _ = lite.setup(module, torch.optim.SGD(module.parameters(), lr=0.1))
    lite.call("on_train_start")
    before = module.layer.weight.detach().clone()
    for batch_idx in range(3):
        model.training_step(torch.randn(4, 32), batch_idx)
    assert module.started == 1
    assert not torch.equal(before, module.layer.weight)
    assert [sorted(m) for m in logger.metrics] == [["loss"]] * 3
    assert module.global_rank == 0 and module.trainer.world_size == 1


def test_a_trainer_takes_precedence():
    """A module set up by Lite and then trained by a Trainer logs through the Trainer."""

    class Logging(BoringModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            out = super().training_step(batch, batch_idx)
            self.log("seen", 1.0)
            return out

    logger = Recording()
    module = Logging()
    fulmen.Lite(accelerator="cpu", devices=1, loggers=[logger]).setup(module)
    trainer = fulmen.Trainer(max_steps=2, limit_val_batches=0, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
    trainer.fit(module)
    assert module.trainer is trainer
    assert trainer.callback_metrics["seen"] == 1.0
    assert logger.metrics == []  # nothing went to the Lite's logger


def test_a_copy_is_not_attached():
    """``copy.deepcopy`` (an EMA of the model) and pickling copy the module, not the Lite."""
    import copy
    import pickle

    module = BoringModel()
    lite = fulmen.Lite(accelerator="cpu", devices=1)
    lite.setup(module, torch.optim.SGD(module.parameters(), lr=0.1))
    for twin in (copy.deepcopy(module), pickle.loads(pickle.dumps(module))):
        assert twin.lite is None and twin.lite_optimizers == []
        assert torch.equal(twin.layer.weight, module.layer.weight)
    assert module.lite is lite and len(module.lite_optimizers) == 1


def test_what_setup_returned_keeps_its_lite():
    """``fulmen.Lite(...).setup(module)`` without keeping the Lite: the returned module still
    logs through it (its weak reference alone would let the Lite be collected)."""
    logger = Recording()
    wrapped_module = fulmen.Lite(accelerator="cpu", devices=1, loggers=[logger]).setup(
        BoringModel())
    gc.collect()
    wrapped_module.log("kept", 1.0)
    assert logger.metrics == [{"kept": 1.0}]
