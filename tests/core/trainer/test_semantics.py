"""Lightning's optimization hooks take effect, and nothing is a silent no-op."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest
import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError


def _fit(model: fulmen.Module, **flags: Any) -> fulmen.Trainer:
    trainer = fulmen.Trainer(**lean(**{"max_epochs": 1, **flags}))
    trainer.fit(model, loader(n=32, batch_size=8))
    return trainer


def test_optimizer_step_warm_up_override_sets_the_lr_used_by_the_step() -> None:
    """The tutorial pattern: scale the lr for the first steps, then optimizer.step(closure)."""
    seen: list[float] = []

    class WarmUp(TinyModule):
        def optimizer_step(self, epoch: int, batch_idx: int, optimizer: Any,
                           optimizer_closure: Any = None) -> None:
            for group in optimizer.param_groups:
                group["lr"] = 0.1 * min(1.0, (self.trainer.global_step + 1) / 4)
            seen.append(optimizer.param_groups[0]["lr"])
            optimizer.step(closure=optimizer_closure)

    model = WarmUp()
    reference = copy.deepcopy(model)
    trainer = _fit(model)
    assert seen == pytest.approx([0.025, 0.05, 0.075, 0.1])
    assert trainer.global_step == 4
    # the same run by hand: the override's lr is the one the update used
    opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for i, (x, y) in enumerate(loader(n=32, batch_size=8)):
        opt.param_groups[0]["lr"] = seen[i]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        opt.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def test_optimizer_step_override_that_skips_the_closure_is_an_error() -> None:
    class Forgets(TinyModule):
        def optimizer_step(self, epoch: int, batch_idx: int, optimizer: Any,
                           optimizer_closure: Any = None) -> None:
            optimizer.step()

    with pytest.raises(ConfigurationError, match=r"must call optimizer.step\(closure="):
        _fit(Forgets())


def test_optimizer_zero_grad_lr_scheduler_step_and_clipping_overrides_are_called() -> None:
    calls: list[Any] = []

    class Hooks(TinyModule):
        def configure_optimizers(self) -> Any:
            opt = torch.optim.SGD(self.parameters(), lr=0.1)
            return [opt], [torch.optim.lr_scheduler.StepLR(opt, 1)]

        def optimizer_zero_grad(self, epoch: int, batch_idx: int, optimizer: Any) -> None:
            calls.append(("zero", epoch, batch_idx))
            optimizer.zero_grad()

        def lr_scheduler_step(self, scheduler: Any, metric: Any) -> None:
            calls.append(("sched", metric))
            scheduler.step()

        def configure_gradient_clipping(self, optimizer: Any, gradient_clip_val: Any = None,
                                        gradient_clip_algorithm: Any = None) -> None:
            calls.append(("clip", gradient_clip_val, gradient_clip_algorithm))
            self.clip_gradients(optimizer, gradient_clip_val=0.01,
                                gradient_clip_algorithm="value")
            grads = [p.grad.abs().max() for p in self.parameters() if p.grad is not None]
            assert max(grads) <= 0.01

    _fit(Hooks(), limit_train_batches=2)
    assert calls == [("zero", 0, 0), ("clip", None, None), ("zero", 0, 1), ("clip", None, None),
                     ("sched", None)]


def test_clip_gradients_contradicting_the_trainer_is_an_error() -> None:
    class Clips(TinyModule):
        def configure_gradient_clipping(self, optimizer: Any, gradient_clip_val: Any = None,
                                        gradient_clip_algorithm: Any = None) -> None:
            self.clip_gradients(optimizer, gradient_clip_val=3.0)

    with pytest.raises(ConfigurationError, match=r"gradient_clip_val=3.0\) contradicts Trainer"):
        _fit(Clips(), gradient_clip_val=1.0)


def test_training_step_returning_none_skips_the_batch_and_warns_for_a_skipped_epoch() -> None:
    class SkipOdd(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            loss = super().training_step(batch, batch_idx)
            return None if batch_idx % 2 else loss

    class SkipAll(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return None

    model = SkipOdd()
    reference = copy.deepcopy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(model)
    opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for i, (x, y) in enumerate(loader(n=32, batch_size=8)):
        if i % 2 == 0:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(reference(x), y).backward()
            opt.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(a, b, atol=1e-6)

    model = SkipAll()
    before = [p.clone() for p in model.parameters()]
    with pytest.warns(UserWarning, match=r"returned None for every batch of epoch 0 \(4 batches"):
        _fit(model)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_losses_and_optimizers_that_cannot_train() -> None:
    class Leaf(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return torch.tensor(1.0, requires_grad=True)

    class Foreign(TinyModule):
        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)

    class Frozen(TinyModule):
        def __init__(self) -> None:
            super().__init__()
            self.freeze()

    # Lightning runs the first two (and trains nothing): fulmen warns and runs them too
    with pytest.warns(RuntimeWarning, match="has no grad_fn"):
        _fit(Leaf())
    with pytest.warns(RuntimeWarning, match=r"optimizer 0 \(SGD\) .* holds 2 parameters, "
                      "none of them Foreign's"):
        _fit(Foreign())
    # a frozen module's loss cannot go backward: Lightning fails there, fulmen says why first
    with pytest.warns(RuntimeWarning, match="Frozen has no trainable parameters"), \
            pytest.raises(ConfigurationError, match="does not require grad"):
        _fit(Frozen())


def test_toggle_optimizer_and_manual_lr_schedulers() -> None:
    class Gan(TinyModule):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False
            self.other = torch.nn.Linear(8, 2)

        def configure_optimizers(self) -> Any:
            a = torch.optim.SGD(self.net.parameters(), lr=0.1)
            b = torch.optim.SGD(self.other.parameters(), lr=0.1)
            return [a, b], [torch.optim.lr_scheduler.StepLR(a, 1, gamma=0.5)]

        def training_step(self, batch: Any, batch_idx: int) -> None:
            a, b = self.optimizers()
            x, y = batch
            with self.toggled_optimizer(a):
                assert not any(p.requires_grad for p in self.other.parameters())
                assert all(p.requires_grad for p in self.net.parameters())
                loss = torch.nn.functional.cross_entropy(self(x) + self.other(x), y)
                a.zero_grad()
                b.zero_grad()
                self.manual_backward(loss)
                assert all(p.grad is None for p in self.other.parameters())
                a.step()
            assert all(p.requires_grad for p in self.other.parameters())
            self.toggle_optimizer(b)
            loss = torch.nn.functional.cross_entropy(self.other(x), y)
            b.zero_grad()
            self.manual_backward(loss)
            b.step()
            self.untoggle_optimizer(b)
            self.lr_schedulers().step()

    trainer = _fit(Gan(), limit_train_batches=2)
    assert trainer.global_step == 4
    assert trainer.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.025)  # stepped twice


def test_module_logger_loggers_and_prepare_data_per_job(tmp_path: Any) -> None:
    from fulmen.loggers import CSVLogger

    seen: list[Any] = []

    class Sees(TinyModule):
        prepare_data_per_node = False

        def prepare_data(self) -> None:
            seen.append("prepare")

        def on_train_start(self) -> None:
            seen.append((self.logger, list(self.loggers)))

    csv = CSVLogger(tmp_path)
    trainer = fulmen.Trainer(**lean(max_epochs=1, logger=csv, limit_train_batches=1))
    trainer.fit(Sees(), loader(n=8))
    assert seen == ["prepare", (csv, [csv])]
    assert TinyModule().logger is None and TinyModule().loggers == []


def test_datamodule_transfer_hooks_win_and_eval_restores_submodule_modes() -> None:
    class Data(fulmen.DataModule):
        def train_dataloader(self) -> Any:
            return loader(n=16)

        def val_dataloader(self) -> Any:
            return loader(n=8)

        def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
            x, y = batch
            return x * 0, y

    class Checks(TinyModule):
        def on_train_start(self) -> None:
            self.net[2].eval()  # a frozen dropout stays in eval through validation

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            assert not batch[0].any() and not self.net[2].training and self.net[0].training
            return super().training_step(batch, batch_idx)

    fulmen.Trainer(**lean(max_epochs=2)).fit(Checks(), datamodule=Data())


def test_min_steps_outlasts_early_stopping_and_overfit_batches_repeats_the_same_batches() -> None:
    class StopsAtOnce(TinyModule):
        def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
            self.trainer.should_stop = True

    trainer = _fit(StopsAtOnce(), max_epochs=5, min_steps=6)
    assert trainer.global_step == 6

    seen: list[torch.Tensor] = []

    class Records(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            seen.append(batch[0].clone())
            return super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(**lean(max_epochs=2, overfit_batches=2))
    with pytest.warns(UserWarning, match="turns off the shuffling"):
        trainer.fit(Records(), loader(n=32, batch_size=8, shuffle=True))
    assert len(seen) == 4 and torch.equal(seen[0], seen[2]) and torch.equal(seen[1], seen[3])


@pytest.mark.parametrize("flag, value, instead", [
    ("model_registry", "me/model", "save_checkpoint")])
def test_unimplemented_lightning_flags_warn_with_the_alternative(
        flag: str, value: Any, instead: str) -> None:
    """Lightning 2.6 runs them (without its optional package too): a warning, then ignored."""
    with pytest.warns(UserWarning,
                      match=rf"Trainer\({flag}=.*not implemented in fulmen and is ignored.*"
                            rf"{instead}"):
        fulmen.Trainer(**{flag: value}, logger=False)


def test_inference_mode_in_test_and_no_grad_when_turned_off() -> None:
    modes: list[bool] = []

    class Sees(TinyModule):
        def test_step(self, batch: Any, batch_idx: int) -> None:
            modes.append(torch.is_inference_mode_enabled())

    fulmen.Trainer(**lean()).test(Sees(), loader(n=8), verbose=False)
    fulmen.Trainer(**lean(inference_mode=False)).test(Sees(), loader(n=8), verbose=False)
    assert modes == [True, False]
