"""configure_optimizers forms, schedulers, accumulation, clipping, manual optimization."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen import ConfigurationError
from fulmen.errors import NonFiniteError


def with_optimizers(result: Any) -> type[TinyModule]:
    class Configured(TinyModule):
        def configure_optimizers(self) -> Any:
            return result(self) if callable(result) else result

    return Configured


def sgd(m: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(m.parameters(), lr=0.1)


@pytest.mark.parametrize("form", [
    sgd,
    lambda m: [sgd(m)],
    lambda m: ([o := sgd(m)], [torch.optim.lr_scheduler.StepLR(o, 1)]),
    lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": torch.optim.lr_scheduler.StepLR(o, 1)},
    lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": {
        "scheduler": torch.optim.lr_scheduler.StepLR(o, 1), "interval": "step",
        "frequency": 2}},
])
def test_accepted_forms(form):
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(with_optimizers(form)(), loader())
    assert trainer.global_step == 8 and len(trainer.optimizers) == 1


@pytest.mark.parametrize(("form", "message"), [
    ("adam", "a str is not one of the accepted forms"),
    (lambda m: {"optimizer": sgd(m), "lr_scheduler": {"interval": "step"}},
     r"the lr_scheduler dict has no 'scheduler'"),
    (lambda m: {"optimizer": sgd(m), "lr_scheduler": {"scheduler": 3}},
     "int is not a learning-rate scheduler"),
    (lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": {
        "scheduler": torch.optim.lr_scheduler.StepLR(o, 1), "interval": "batch"}},
     "interval='batch' must be 'epoch' or 'step'"),
    (lambda m: {"optimizer": (o := sgd(m)),
                "lr_scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(o)},
     "ReduceLROnPlateau needs 'monitor'"),
])
def test_unusable_returns_say_what_is_accepted(form, message):
    with pytest.raises(ConfigurationError, match=message) as info:
        fulmen.Trainer(**lean(max_epochs=1)).fit(with_optimizers(form)(), loader())
    assert "Return an optimizer; a list or tuple of optimizers" in str(info.value)


@pytest.mark.parametrize(("form", "message"), [
    (lambda m: {"optimizer": sgd(m), "lr_schedulers": 1},
     r"Found unsupported keys in the optimizer configuration: \{'lr_schedulers'\}\. They are "
     r"ignored: the keys are optimizer, lr_scheduler, monitor"),
    (lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": {
        "scheduler": torch.optim.lr_scheduler.StepLR(o, 1), "intervall": "step"}},
     r"Found unsupported keys in the lr scheduler dict: \{'intervall'\}\. HINT: remove them .* "
     r"its keys are scheduler, interval, frequency, monitor, strict, name, reduce_on_plateau"),
])
def test_unknown_keys_warn_and_are_ignored(form, message):
    """Lightning warns of keys it does not know (a misspelt ``"intervall"`` too) and ignores
    them: the fit runs, the scheduler steps per epoch (the default interval)."""
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    with pytest.warns(RuntimeWarning, match=message):
        trainer.fit(with_optimizers(form)(), loader())
    assert trainer.global_step == 8
    assert all(c.interval == "epoch" for c in trainer.lr_scheduler_configs)


def test_none_runs_without_an_optimizer():
    """Lightning's ``test_none_optimizer``: ``configure_optimizers`` returning None warns and
    the fit runs (steps counted, nothing trained)."""
    model = with_optimizers(None)()
    before = [p.detach().clone() for p in model.parameters()]
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    with pytest.warns(UserWarning, match="will run with no optimizer"):
        trainer.fit(model, loader())
    assert trainer.global_step == 8
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_two_optimizers_need_manual_optimization():
    model = with_optimizers(lambda m: [sgd(m), sgd(m)])()
    with pytest.raises(ConfigurationError, match="automatic optimization steps one"):
        fulmen.Trainer(**lean(max_epochs=1)).fit(model, loader())


def lrs(form: Any, epochs: int = 2) -> list[float]:
    seen: list[float] = []

    class Watch(fulmen.Callback):
        def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, i: int) -> None:
            seen.append(trainer.optimizers[0].param_groups[0]["lr"])

    fulmen.Trainer(callbacks=[Watch()], **lean(max_epochs=epochs)).fit(
        with_optimizers(form)(), loader(n=32))  # 4 batches per epoch
    return seen


def test_epoch_and_step_intervals():
    def epoch(m: Any) -> Any:
        o = torch.optim.SGD(m.parameters(), lr=1.0)
        return [o], [torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)]

    assert lrs(epoch) == [1.0] * 4 + [0.5] * 4

    def step_every_2(m: Any) -> Any:
        o = torch.optim.SGD(m.parameters(), lr=1.0)
        return {"optimizer": o, "lr_scheduler": {"scheduler": torch.optim.lr_scheduler.StepLR(
            o, step_size=1, gamma=0.5), "interval": "step", "frequency": 2}}

    assert lrs(step_every_2, epochs=1) == [1.0, 1.0, 0.5, 0.5]


def test_plateau_scheduler_reads_a_logged_metric_and_names_missing_ones():
    def plateau(monitor: str) -> Any:
        def make(m: Any) -> Any:
            o = torch.optim.SGD(m.parameters(), lr=1.0)
            return {"optimizer": o, "lr_scheduler": {
                "scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0),
                "monitor": monitor}}
        return make

    assert len(lrs(plateau("train_loss"))) == 8
    with pytest.raises(ConfigurationError, match=r"metric 'nope' which is not available\. "
                       r"Available metrics are: \['train_loss'\]"):
        lrs(plateau("nope"))


def test_accumulating_k_batches_of_b_equals_one_batch_of_k_times_b():
    torch.manual_seed(0)
    a, b = TinyModule(), TinyModule()
    b.load_state_dict(a.state_dict())
    fulmen.Trainer(**lean(max_epochs=1, accumulate_grad_batches=4)).fit(a, loader(n=32,
                                                                                  batch_size=4))
    fulmen.Trainer(**lean(max_epochs=1)).fit(b, loader(n=32, batch_size=16))
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-6)


@pytest.mark.parametrize(("algorithm", "check"), [
    ("norm", lambda grads: float(torch.norm(torch.stack([g.norm() for g in grads]))) <= 0.5 + 1e-4),
    ("value", lambda grads: all(float(g.abs().max()) <= 0.5 + 1e-6 for g in grads)),
])
def test_gradient_clipping(algorithm, check):
    seen: list[bool] = []

    class RecordingSGD(torch.optim.SGD):
        def step(self, closure: Any = None) -> Any:  # type: ignore[override]
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()  # forward, backward, hooks and clipping
            seen.append(check([p.grad for g in self.param_groups for p in g["params"]]))
            super().step()
            return loss

    class Big(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return super().training_step(batch, batch_idx) * 1000

        def configure_optimizers(self) -> Any:
            return RecordingSGD(self.parameters(), lr=0.01)

    fulmen.Trainer(**lean(max_epochs=1, gradient_clip_val=0.5,
                          gradient_clip_algorithm=algorithm)).fit(Big(), loader())
    assert len(seen) == 8 and all(seen)


def test_manual_optimization_with_two_optimizers():
    class GAN(fulmen.Module):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False
            self.g = torch.nn.Linear(8, 8)
            self.d = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> None:
            opt_g, opt_d = self.optimizers()
            x, _ = batch
            loss_d = F.softplus(-self.d(x)).mean() + F.softplus(self.d(self.g(x).detach())).mean()
            opt_d.zero_grad()
            self.manual_backward(loss_d)
            opt_d.step()
            loss_g = F.softplus(-self.d(self.g(x))).mean()
            opt_g.zero_grad()
            self.manual_backward(loss_g)
            self.clip_gradients(opt_g, gradient_clip_val=1.0)
            opt_g.step()
            self.log_dict({"loss_d": loss_d, "loss_g": loss_g})

        def configure_optimizers(self) -> Any:
            return [torch.optim.SGD(self.g.parameters(), lr=0.01),
                    torch.optim.SGD(self.d.parameters(), lr=0.01)]

    model = GAN()
    before = model.g.weight.detach().clone()
    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(model, loader())
    assert trainer.global_step == 16  # both optimizers count
    assert not torch.equal(before, model.g.weight)
    assert {"loss_d", "loss_g"} <= set(trainer.callback_metrics)
    with pytest.raises(ConfigurationError, match="applies to automatic optimization"):
        fulmen.Trainer(**lean(max_epochs=1, accumulate_grad_batches=2)).fit(GAN(), loader())


@pytest.mark.parametrize(("returned", "message"), [
    ("loss", "training_step returned a str"),
    ({"los": 1}, r"returned a dict without 'loss' \(keys: \['los'\]\)"),
    (torch.ones(2, requires_grad=True), r"a loss of shape \(2,\); the loss must be a scalar"),
    (torch.tensor(1.0), "does not require grad"),
])
def test_bad_losses_are_explained(returned, message):
    class Bad(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return returned

    with pytest.raises(ConfigurationError, match=message):
        fulmen.Trainer(**lean(max_epochs=1)).fit(Bad(), loader())


def test_returning_none_skips_the_batch():
    class Skips(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return None if batch_idx % 2 else super().training_step(batch, batch_idx)

    trainer = fulmen.Trainer(**lean(max_epochs=1))
    trainer.fit(Skips(), loader())
    assert trainer.global_step == 8


def test_detect_anomaly_stops_on_a_nan_loss_and_names_the_op_of_a_nan_gradient():
    """``detect_anomaly=True``: a NaN loss stops every rank before backward
    (``NonFiniteError``, naming the step and batch); a finite loss whose gradient turns NaN is
    caught by torch's anomaly mode, which names the backward operation (Lightning's
    behaviour)."""
    class NaNLoss(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, _ = batch
            return torch.sqrt(self(x) - 1e6).sum()

    with pytest.raises(NonFiniteError, match="global step 0, batch_idx 0"), \
            pytest.warns(UserWarning):
        fulmen.Trainer(**lean(max_epochs=1, detect_anomaly=True)).fit(NaNLoss(), loader())

    class NaNGradient(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, _ = batch
            return torch.sqrt(self(x) * 0).sum()  # 0 forward; inf * 0 = NaN in backward

    with pytest.raises(RuntimeError, match="returned nan values"), pytest.warns(UserWarning):
        fulmen.Trainer(**lean(max_epochs=1, detect_anomaly=True)).fit(NaNGradient(), loader())


def test_module_backward_override_gets_the_scaled_loss_in_both_optimizations():
    """``Module.backward`` is a hook (Lightning's): called from the training step's closure and
    from ``manual_backward``, through the precision, with the loss after scaling."""
    from fulmen_examples import StaticScalePrecision

    class CustomBackward(TinyModule):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[float] = []
            self.unscaled: list[float] = []

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            loss = super().training_step(batch, batch_idx)
            self.unscaled.append(float(loss.detach()))
            return loss

        def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
            self.seen.append(float(loss.detach()))
            loss.backward(*args, **kwargs)

    model = CustomBackward()
    fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=3),
                   plugins=[StaticScalePrecision(scale=4.0)]).fit(model, loader())
    assert model.seen == pytest.approx([4.0 * u for u in model.unscaled])

    class ManualBackward(CustomBackward):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            opt = self.optimizers()
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            opt.zero_grad()
            self.manual_backward(loss, retain_graph=True)
            opt.step()

    manual = ManualBackward()
    fulmen.Trainer(**lean(max_epochs=1, limit_train_batches=2)).fit(manual, loader())
    assert len(manual.seen) == 2
