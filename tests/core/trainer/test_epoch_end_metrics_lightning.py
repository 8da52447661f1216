"""What ``trainer.callback_metrics`` holds inside the epoch-end hooks.

Lightning's evaluation loop computes the epoch values of what the steps logged before
``on_validation_epoch_end`` runs (``_EvaluationLoop.on_run_end``: ``epoch_end_reached`` makes
``callback_metrics`` read the epoch values), and adds what the epoch-end hooks log after them
(``update_eval_epoch_metrics``); the sanity check's values are readable there too, and dropped
after it. A torchmetrics ``Metric`` logged but never updated is computed all the same.

``test_metrics_and_outputs_device`` is Lightning's
(``tests_pytorch/trainer/logging_/test_eval_loop_logging.py``), run on the CPU as well as on
CUDA. The other tests were written from Lightning's source; their expected values are what
Lightning 2.6.6 gives for the same code (scvi-tools' training plans step ``ReduceLROnPlateau`` on
``trainer.callback_metrics[...]`` in ``on_validation_epoch_end``).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import Callback
from fulmen.loggers import Logger

torchmetrics = pytest.importorskip("torchmetrics")


@pytest.mark.parametrize("accelerator", [
    "cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                         reason="needs a CUDA device"))])
def test_metrics_and_outputs_device(tmp_path, accelerator):
    class TestModel(BoringModel):
        outputs: list[torch.Tensor] = []

        def on_before_backward(self, loss: torch.Tensor) -> None:
            # the loss should be on the correct device before backward
            assert loss.device.type == accelerator

        def validation_step(self, *args: Any) -> Any:
            x = torch.tensor(2.0, requires_grad=True, device=self.device)
            y = x * 2
            assert x.requires_grad is True
            assert y.grad_fn is None  # disabled by validation
            self.log("foo", y)
            self.outputs.append(y)
            return y

        def on_validation_epoch_end(self) -> None:
            # the step outputs were not moved after returning them
            assert all(o.device == self.device for o in self.outputs)
            # and the logged metrics aren't
            assert self.trainer.callback_metrics["foo"].device.type == accelerator

    model = TestModel()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, fast_dev_run=True,
                             accelerator=accelerator, devices=1)
    trainer.fit(model)
    trainer.validate(model, verbose=False)


def _rounded(trainer: Any) -> dict[str, float]:
    return {k: round(float(v), 4) for k, v in sorted(trainer.callback_metrics.items())}


class Recorder(Callback):
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def on_validation_epoch_end(self, trainer: Any, module: Any) -> None:
        self.seen.append(("cb_val_epoch_end", trainer.sanity_checking, _rounded(trainer)))

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        self.seen.append(("cb_val_end", trainer.sanity_checking, _rounded(trainer)))

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        self.seen.append(("cb_train_epoch_end", trainer.sanity_checking, _rounded(trainer)))


class Logs(BoringModel):
    def __init__(self, seen: list[Any]) -> None:
        super().__init__()
        self.seen = seen
        self.unused = torchmetrics.SumMetric()
        self.used = torchmetrics.SumMetric()

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        out = super().training_step(batch, batch_idx)
        self.log("tl", batch_idx * 1.0, on_epoch=True)
        return out

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("vl", float(batch_idx + 1))
        self.used.update(2.0)
        self.log_dict({"used": self.used, "unused": self.unused})  # unused: never updated

    def on_validation_epoch_end(self) -> None:
        self.seen.append(("m_val_epoch_end", self.trainer.sanity_checking,
                          _rounded(self.trainer)))
        self.log("late", 7.0)

    def on_train_epoch_end(self) -> None:
        self.seen.append(("m_train_epoch_end", False, _rounded(self.trainer)))


#: Lightning 2.6.6's values for the same run
EXPECTED = [
    ("cb_val_epoch_end", True, {"unused": 0.0, "used": 2.0, "vl": 1.0}),
    ("m_val_epoch_end", True, {"unused": 0.0, "used": 2.0, "vl": 1.0}),
    ("cb_val_end", True, {"late": 7.0, "unused": 0.0, "used": 2.0, "vl": 1.0}),
    ("cb_val_epoch_end", False, {"tl": 1.0, "tl_step": 1.0, "unused": 0.0, "used": 6.0,
                                 "vl": 2.0}),
    ("m_val_epoch_end", False, {"tl": 1.0, "tl_step": 1.0, "unused": 0.0, "used": 6.0,
                                "vl": 2.0}),
    ("cb_val_end", False, {"late": 7.0, "tl": 1.0, "tl_step": 1.0, "unused": 0.0,
                           "used": 6.0, "vl": 2.0}),
    ("cb_train_epoch_end", False, {"late": 7.0, "tl": 0.5, "tl_epoch": 0.5, "tl_step": 1.0,
                                   "unused": 0.0, "used": 6.0, "vl": 2.0}),
    ("m_train_epoch_end", False, {"late": 7.0, "tl": 0.5, "tl_epoch": 0.5, "tl_step": 1.0,
                                  "unused": 0.0, "used": 6.0, "vl": 2.0}),
]


class Recording(Logger):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, dict[str, float]]] = []

    @property
    def name(self) -> str:
        return "recording"

    @property
    def version(self) -> int:
        return 0

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.calls.append((int(step or 0), dict(metrics)))

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass


def test_epoch_end_hooks_read_this_epochs_values(tmp_path):
    seen: list[Any] = []
    logger = Recording()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                             limit_val_batches=3, num_sanity_val_steps=1, logger=logger,
                             enable_progress_bar=False, enable_model_summary=False,
                             enable_checkpointing=False, callbacks=[Recorder(seen)])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The ``compute`` method of metric SumMetric")
        trainer.fit(Logs(seen))
        assert seen == EXPECTED
        assert _rounded(trainer) == EXPECTED[-1][2]
        # the validation's epoch values reach the loggers in one call, with the hook's value
        validation_calls = [metrics for _, metrics in logger.calls if "vl" in metrics]
        assert len(validation_calls) == 1
        assert {k: validation_calls[0][k] for k in ("vl", "used", "unused", "late")} == \
            {"vl": 2.0, "used": 6.0, "unused": 0.0, "late": 7.0}
        results = trainer.validate(Logs([]), verbose=False)
    assert results == [{"vl": 2.0, "used": 6.0, "unused": 0.0, "late": 7.0}]


def test_reduce_lr_on_plateau_stepped_in_validation_epoch_end(tmp_path):
    """scvi's pattern: the module steps its plateau scheduler on the validation metric in
    ``on_validation_epoch_end`` (a KeyError before this epoch's value was readable there)."""
    class Plateau(BoringModel):
        def validation_step(self, batch: Any, batch_idx: int) -> None:
            self.log("elbo_validation", 1.0)

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0)
            return {"optimizer": optimizer, "lr_scheduler": {
                "scheduler": scheduler, "monitor": "elbo_validation"}}

        def on_validation_epoch_end(self) -> None:
            scheduler = self.lr_schedulers()
            scheduler.step(self.trainer.callback_metrics["elbo_validation"])

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=3, limit_train_batches=2,
                             limit_val_batches=2, logger=False, enable_progress_bar=False,
                             enable_model_summary=False, enable_checkpointing=False)
    model = Plateau()
    trainer.fit(model)
    assert trainer.state.finished
    assert model.optimizers().param_groups[0]["lr"] < 0.1
