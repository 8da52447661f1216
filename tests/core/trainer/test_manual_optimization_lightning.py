"""Port of the CPU-runnable parts of Lightning's
``tests_pytorch/trainer/optimization/test_manual_optimization.py``.

Deliberate differences: backward calls are counted with an ``on_before_backward`` callback
instead of ``mock.patch.object(Strategy, "backward")`` (fulmen's tests never patch internals),
and scheduler steps by reading the learning rate instead of patching ``StepLR.step``. The
GPU/AMP and multi-GPU variants are covered by the DDP test in ``test_manual_ddp.py`` (CPU, gloo).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen


class Boring(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(self(x), torch.ones_like(self(x)))

    def loss(self, predictions: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(predictions, torch.ones_like(predictions))

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        return {"loss": self.step(batch[0])}

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)]


def data() -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(64, 32)), batch_size=2)


class CountBackward(fulmen.Callback):
    def __init__(self) -> None:
        self.count = 0

    def on_before_backward(self, trainer: Any, module: Any, loss: Any) -> None:
        self.count += 1


def trainer_for(callback: fulmen.Callback | None = None, **flags: Any) -> fulmen.Trainer:
    flags = {"max_epochs": 1, **flags}
    return fulmen.Trainer(accelerator="cpu", devices=1, limit_val_batches=0,
                          log_every_n_steps=1, enable_model_summary=False,
                          enable_progress_bar=False, enable_checkpointing=False, logger=False,
                          callbacks=[callback] if callback else None, **flags)


class ManualOptModel(Boring):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        opt_a, opt_b = self.optimizers()
        assert self.layer.weight.grad is None
        loss_1 = self.step(batch[0])
        self.manual_backward(loss_1)
        opt_a.step()
        opt_a.zero_grad()
        assert self.layer.weight.grad is None

        loss_2 = self.step(batch[0])
        self.manual_backward(loss_2, retain_graph=True)
        self.manual_backward(loss_2)
        assert self.layer.weight.grad is not None
        opt_b.step()
        opt_b.zero_grad()
        assert self.layer.weight.grad is None
        return loss_2

    def configure_optimizers(self) -> Any:
        return (torch.optim.SGD(self.layer.parameters(), lr=0.1),
                torch.optim.SGD(self.layer.parameters(), lr=0.1))


def test_multiple_optimizers_manual_call_counts() -> None:
    counter = CountBackward()
    trainer = trainer_for(counter, limit_train_batches=2)
    trainer.fit(ManualOptModel(), data())
    assert counter.count == 2 * 3
    assert trainer.global_step == 2 * 2


def test_multiple_optimizers_manual_log() -> None:
    class TestModel(ManualOptModel):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            loss_2 = super().training_step(batch, batch_idx)
            self.log("a", loss_2, on_epoch=True)

    counter = CountBackward()
    trainer = trainer_for(counter, limit_train_batches=2)
    trainer.fit(TestModel(), data())
    assert counter.count == 2 * 3
    assert {"a_step", "a_epoch"} <= set(trainer.callback_metrics)


def test_step_with_optimizer_closure() -> None:
    fulmen.seed_everything(1)
    losses: list[torch.Tensor] = []

    class TestModel(Boring):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            assert self.layer.weight.grad is None
            opt = self.optimizers()

            def compute_loss() -> torch.Tensor:
                x = F.dropout(batch[0], 0.1)
                return self.loss(F.dropout(self(x), 0.1))

            def optimizer_closure() -> None:
                step_losses = []
                for backward_idx in range(2):
                    loss = compute_loss()
                    step_losses.append(loss)
                    self.manual_backward(loss, retain_graph=backward_idx == 0)
                loss = torch.stack(step_losses).mean()
                losses.append(loss.detach())
                self.log("train_loss", loss, on_step=True, prog_bar=True, on_epoch=True)
                assert step_losses[0] != step_losses[1]

            before = self.layer.weight.clone()
            opt.step(closure=optimizer_closure)
            opt.zero_grad()
            assert not torch.equal(before, self.layer.weight)

    counter = CountBackward()
    trainer = trainer_for(counter, limit_train_batches=2)
    trainer.fit(TestModel(), data())
    assert counter.count == 2 * 2
    assert trainer.progress_bar_metrics["train_loss_step"] == pytest.approx(float(losses[-1]))
    assert trainer.progress_bar_metrics["train_loss_epoch"] == pytest.approx(
        float(torch.stack(losses).mean()))


def test_step_with_optimizer_closure_2() -> None:
    class TestModel(Boring):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            opt = self.optimizers()
            loss = self(batch[0]).sum()

            def optimizer_closure() -> None:
                for backward_idx in range(2):
                    self.manual_backward(loss, retain_graph=backward_idx != 1)

            before = self.layer.weight.clone()
            opt.step(closure=optimizer_closure)
            assert not torch.equal(before, self.layer.weight)

    counter = CountBackward()
    trainer = trainer_for(counter, limit_train_batches=4)
    trainer.fit(TestModel(), data())
    assert counter.count == 4 * 2
    assert trainer.global_step == 4


def test_lr_schedulers() -> None:
    """``lr_schedulers()`` returns the objects of ``configure_optimizers``, in order."""
    seen: list[bool] = []

    class TestModel(Boring):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            scheduler_1, scheduler_2 = self.lr_schedulers()
            seen.append(scheduler_1 is self.scheduler_1 and scheduler_2 is self.scheduler_2)

        def configure_optimizers(self) -> Any:
            optimizer_1 = torch.optim.SGD(self.parameters(), lr=0.1)
            optimizer_2 = torch.optim.SGD(self.parameters(), lr=0.1)
            self.scheduler_1 = torch.optim.lr_scheduler.StepLR(optimizer_1, step_size=1)
            self.scheduler_2 = torch.optim.lr_scheduler.StepLR(optimizer_2, step_size=1)
            return [optimizer_1, optimizer_2], [self.scheduler_1, self.scheduler_2]

    trainer_for(limit_train_batches=1).fit(TestModel(), data())
    assert seen == [True]


@pytest.mark.parametrize("scheduler_as_dict", [True, False])
def test_lr_schedulers_reduce_lr_on_plateau(scheduler_as_dict: bool) -> None:
    class TestModel(Boring):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            pass

        def on_train_epoch_end(self) -> None:
            self.lr_schedulers().step(torch.tensor(0.0))

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
            scheduler: Any = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
            if scheduler_as_dict:
                scheduler = {"scheduler": scheduler, "monitor": "train_loss",
                             "interval": "step"}
            return [optimizer], [scheduler]

    trainer = trainer_for(limit_train_batches=1)
    if scheduler_as_dict:
        with pytest.warns(RuntimeWarning, match=r"\['interval', 'monitor'\], which manual "
                                                r"optimization ignores"):
            trainer.fit(TestModel(), data())
        assert trainer.lr_scheduler_configs[0].interval == "step"
    else:
        trainer.fit(TestModel(), data())


def test_lr_scheduler_step_not_called() -> None:
    """Under manual optimization the Trainer never steps the schedulers."""
    class Manual(Boring):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(self.step(batch[0]))
            opt.step()

    trainer = trainer_for(limit_train_batches=2, max_epochs=2)
    trainer.fit(Manual(), data())
    assert trainer.optimizers[0].param_groups[0]["lr"] == 0.1
