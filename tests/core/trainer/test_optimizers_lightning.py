"""Port of the CPU-runnable parts of Lightning's
``tests_pytorch/trainer/optimization/test_optimizers.py``.

Deliberate differences (fulmen's behaviour, asserted as such):

- Misconfigurations raise ``fulmen.errors.ConfigurationError`` (Lightning:
  ``MisconfigurationException`` or ``TypeError``) with fulmen's messages, which echo what
  ``configure_optimizers`` returned and list the accepted forms.
- ``trainer.lr_scheduler_configs[i].reduce_on_plateau`` is ``None`` unless given (it is then
  read from the scheduler's type; ``needs_metric`` says which); Lightning stores the bool.
- A custom scheduler needs only ``step()`` and ``state_dict()`` (duck typing; Lightning
  requires a torch ``LRScheduler`` or a ``lr_scheduler_step`` override); one whose ``step``
  cannot be called as the Trainer would call it is refused before the first batch unless the
  module overrides ``lr_scheduler_step``.
- Schedulers are observed, not patched: step calls are counted with test-local subclasses of
  the torch schedulers instead of ``mock.patch("...StepLR.step")``, and the configuration
  forms are checked through ``trainer.fit`` instead of the private
  ``_init_optimizers_and_lr_schedulers`` / ``_configure_optimizers`` /
  ``_configure_schedulers_automatic_opt``.

Fulmen bugs these tests found, fixed in ``trainer/optim.py`` and ``trainer/loops.py``:

- ``([optimizers], scheduler)`` (one scheduler, not in a list) was refused; Lightning takes it.
- A scheduler built on an optimizer that ``configure_optimizers`` did not return was stepped
  silently (changing nothing that trains); it is now a ``ConfigurationError``.
- ``OneCycleLR`` with the default ``'interval': 'epoch'`` gave no warning; it now warns
  (``RuntimeWarning``, as Lightning).
- An epoch-interval plateau scheduler was stepped (or raised, when strict and its metric was
  missing) at the end of an epoch cut short by ``max_steps``; like Lightning it now steps only
  after a complete epoch.
- Step-interval plateau schedulers stepped before that batch's validation; like Lightning they
  now step after it (so they may monitor a validation metric), non-plateau ones before.
- A custom scheduler whose ``step`` needs arguments failed with a ``TypeError`` at the first
  epoch's end; it is now refused before the first batch (unless ``lr_scheduler_step`` is
  overridden), naming its signature and what would work.

Not ported:

- ``test_lr_scheduler_with_unknown_interval_raises``: covered in
  ``test_optimization.py::test_unusable_returns_say_what_is_accepted``.
- ``test_optimizer_state_on_device``: needs two CUDA GPUs (DDP).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch import optim
from torch.utils.data import DataLoader

import fulmen
from fulmen.callbacks import ModelCheckpoint
from fulmen.errors import ConfigurationError


class Boring(BoringModel):
    """Lightning's BoringModel with its optimizer over the layer's parameters."""

    def configure_optimizers(self) -> Any:
        optimizer = optim.SGD(self.layer.parameters(), lr=0.1)
        return [optimizer], [optim.lr_scheduler.StepLR(optimizer, step_size=1)]


def data() -> DataLoader:
    return DataLoader(RandomDataset(32, 64), batch_size=2)


def trainer_for(tmp_path: Any, **flags: Any) -> fulmen.Trainer:
    flags = {"max_epochs": 1, **flags}
    return fulmen.Trainer(accelerator="cpu", devices=1, default_root_dir=tmp_path, logger=False,
                          enable_progress_bar=False, enable_model_summary=False, **flags)


def fast(tmp_path: Any, **flags: Any) -> fulmen.Trainer:
    """Lightning's ``fast_dev_run=True``: one batch, no checkpoint."""
    return trainer_for(tmp_path, fast_dev_run=True, **flags)


def returning(result: Any) -> Boring:
    """A Boring whose ``configure_optimizers`` returns ``result(model)``."""
    model = Boring()
    model.configure_optimizers = lambda: result(model)  # type: ignore[method-assign]
    return model


class CountingStepLR(optim.lr_scheduler.StepLR):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls = 0  # torch's LRScheduler calls step() once in __init__
        super().__init__(*args, **kwargs)

    def step(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self.calls += 1
        super().step(*args, **kwargs)


class CountingPlateau(optim.lr_scheduler.ReduceLROnPlateau):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0

    def step(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self.calls += 1
        super().step(*args, **kwargs)


def test_optimizer_with_scheduling(tmp_path):
    trainer = trainer_for(tmp_path, limit_val_batches=0.1, limit_train_batches=0.2,
                          val_check_interval=0.5)
    trainer.fit(Boring(), data(), data())

    adjusted_lr = [pg["lr"] for pg in trainer.optimizers[0].param_groups]
    assert len(trainer.lr_scheduler_configs) == 1
    assert all(a == adjusted_lr[0] for a in adjusted_lr)
    assert adjusted_lr[0] == pytest.approx(0.1 * 0.1)


def test_multi_optimizer_with_scheduling(tmp_path):
    class Model(Boring):
        init_lr = 5e-4

        def training_step(self, batch: Any, batch_idx: int) -> None:
            opt1, opt2 = self.optimizers()
            loss = self.step(batch)
            opt1.zero_grad()
            opt2.zero_grad()
            self.manual_backward(loss)
            opt1.step()
            opt2.step()

        def on_train_epoch_end(self) -> None:
            scheduler1, scheduler2 = self.lr_schedulers()
            scheduler1.step()
            scheduler2.step()

        def configure_optimizers(self) -> Any:
            optimizer1 = optim.Adam(self.parameters(), lr=self.init_lr)
            optimizer2 = optim.Adam(self.parameters(), lr=self.init_lr)
            lr_scheduler1 = optim.lr_scheduler.StepLR(optimizer1, step_size=1)
            lr_scheduler2 = optim.lr_scheduler.StepLR(optimizer2, step_size=1)
            return [optimizer1, optimizer2], [lr_scheduler1, lr_scheduler2]

    model = Model()
    model.automatic_optimization = False
    trainer = trainer_for(tmp_path, limit_val_batches=0.1, limit_train_batches=0.2)
    trainer.fit(model, data(), data())

    adjusted_lr1 = [pg["lr"] for pg in trainer.optimizers[0].param_groups]
    adjusted_lr2 = [pg["lr"] for pg in trainer.optimizers[1].param_groups]
    assert len(trainer.lr_scheduler_configs) == 2
    assert all(a == adjusted_lr1[0] for a in adjusted_lr1)
    assert all(a == adjusted_lr2[0] for a in adjusted_lr2)
    assert adjusted_lr1[0] == pytest.approx(model.init_lr * 0.1)
    assert adjusted_lr2[0] == pytest.approx(model.init_lr * 0.1)


def test_reducelronplateau_with_no_monitor_raises(tmp_path):
    def conf(m: Boring) -> Any:
        optimizer = optim.Adam(m.parameters())
        return [optimizer], [optim.lr_scheduler.ReduceLROnPlateau(optimizer)]

    with pytest.raises(ConfigurationError, match="ReduceLROnPlateau needs 'monitor'"):
        fast(tmp_path).fit(returning(conf), data())


def test_reducelronplateau_with_no_monitor_in_lr_scheduler_dict_raises(tmp_path):
    def conf(m: Boring) -> Any:
        optimizer = optim.Adam(m.parameters())
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": optim.lr_scheduler.ReduceLROnPlateau(optimizer)}}

    with pytest.raises(ConfigurationError, match="ReduceLROnPlateau needs 'monitor'"):
        fast(tmp_path).fit(returning(conf), data())


def test_onecyclelr_with_epoch_interval_warns(tmp_path):
    def conf(m: Boring) -> Any:
        optimizer = optim.Adam(m.parameters())
        return {"optimizer": optimizer, "lr_scheduler": {
            "scheduler": optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.01, total_steps=3)}}

    with pytest.warns(RuntimeWarning, match="OneCycleLR.*'interval': 'epoch'.*'interval': 'step'"):
        fast(tmp_path).fit(returning(conf), data())

    def per_step(m: Boring) -> Any:
        config = conf(m)
        config["lr_scheduler"]["interval"] = "step"
        return config

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fast(tmp_path).fit(returning(per_step), data())


def test_scheduler_initialized_with_custom_reduceonplateau(tmp_path):
    """A custom scheduler flagged ``reduce_on_plateau`` is stepped with the monitored value."""

    class CustomReduceLROnPlateau:
        def __init__(self) -> None:
            self.metrics: list[float] = []

        def step(self, metric: Any) -> None:
            self.metrics.append(float(metric))

        def state_dict(self) -> dict:
            return {}

        def load_state_dict(self, state: dict) -> None: ...

    class Model(Boring):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("my_loss", float(batch_idx), on_epoch=True, on_step=False)
            return super().training_step(batch, batch_idx)

        def configure_optimizers(self) -> Any:
            optimizer = optim.SGD(self.parameters(), lr=0.1)
            return [optimizer], [{"reduce_on_plateau": True, "monitor": "my_loss",
                                  "scheduler": CustomReduceLROnPlateau()}]

    trainer = trainer_for(tmp_path, max_epochs=2, limit_train_batches=3, limit_val_batches=0,
                          enable_checkpointing=False)
    trainer.fit(Model(), data())
    config = trainer.lr_scheduler_configs[0]
    assert isinstance(config.scheduler, CustomReduceLROnPlateau)
    assert config.reduce_on_plateau and config.needs_metric
    assert config.scheduler.metrics == [1.0, 1.0]  # the epoch mean of 0, 1, 2


def test_reducelronplateau_scheduling(tmp_path):
    class TestModel(Boring):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("foo", batch_idx)
            return super().training_step(batch, batch_idx)

        def configure_optimizers(self) -> Any:
            optimizer = optim.Adam(self.parameters())
            return {"optimizer": optimizer,
                    "lr_scheduler": CountingPlateau(optimizer), "monitor": "foo"}

    trainer = fast(tmp_path)
    trainer.fit(TestModel(), data())
    config = trainer.lr_scheduler_configs[0]
    assert (config.monitor, config.interval, config.frequency, config.strict, config.name) == (
        "foo", "epoch", 1, True, None)
    assert config.needs_metric and config.reduce_on_plateau is None
    assert config.scheduler.calls == 1


@pytest.mark.parametrize("form", [
    "single", "opt tuple", "opt list", "tuple of 2 lists", "tuple of 1 list", "single dict",
    "list of dicts"])
def test_optimizer_return_options(tmp_path, form):
    class Manual(Boring):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            for opt in self.optimizers():
                opt.zero_grad()
                self.manual_backward(self.step(batch))
                opt.step()

    model = Manual() if form in ("opt tuple", "opt list", "list of dicts") else Boring()
    opt_a = optim.Adam(model.parameters(), lr=0.002)
    opt_b = optim.SGD(model.parameters(), lr=0.002)
    scheduler_a = optim.lr_scheduler.StepLR(opt_a, 10)
    optim.lr_scheduler.StepLR(opt_b, 10)
    returns, optimizers, schedulers = {
        "single": (opt_a, [opt_a], []),
        "opt tuple": ((opt_a, opt_b), [opt_a, opt_b], []),
        "opt list": ([opt_a, opt_b], [opt_a, opt_b], []),
        "tuple of 2 lists": (([opt_a], [scheduler_a]), [opt_a], [scheduler_a]),
        "tuple of 1 list": (([opt_a], scheduler_a), [opt_a], [scheduler_a]),
        "single dict": ({"optimizer": opt_a, "lr_scheduler": scheduler_a}, [opt_a],
                        [scheduler_a]),
        "list of dicts": ([{"optimizer": opt_a, "lr_scheduler": scheduler_a},
                           {"optimizer": opt_b, "lr_scheduler": scheduler_a}],
                          [opt_a, opt_b], [scheduler_a, scheduler_a]),
    }[form]
    model.configure_optimizers = lambda: returns  # type: ignore[method-assign]
    trainer = fast(tmp_path)
    trainer.fit(model, data())
    assert trainer.optimizers == optimizers
    assert [c.scheduler for c in trainer.lr_scheduler_configs] == schedulers
    for config in trainer.lr_scheduler_configs:
        assert (config.interval, config.frequency, config.monitor, config.strict,
                config.name, config.needs_metric) == ("epoch", 1, None, True, None, False)


def test_configure_optimizer_from_dict(tmp_path):
    class TestModel(Boring):
        def configure_optimizers(self) -> Any:
            return {"optimizer": optim.SGD(params=self.parameters(), lr=1e-03)}

    trainer = fast(tmp_path)
    trainer.fit(TestModel(), data())
    assert len(trainer.optimizers) == 1 and not trainer.lr_scheduler_configs


@pytest.mark.parametrize("fn", ["validate", "test", "predict"])
def test_init_optimizers_during_evaluation_and_prediction(tmp_path, fn):
    class TestModel(Boring):
        def configure_optimizers(self) -> Any:
            optimizer1 = optim.Adam(self.parameters(), lr=0.1)
            optimizer2 = optim.Adam(self.parameters(), lr=0.1)
            lr_scheduler1 = optim.lr_scheduler.StepLR(optimizer1, step_size=1)
            lr_scheduler2 = optim.lr_scheduler.StepLR(optimizer2, step_size=1)
            return [optimizer1, optimizer2], [lr_scheduler1, lr_scheduler2]

    trainer = trainer_for(tmp_path, fast_dev_run=2)
    getattr(trainer, fn)(TestModel(), data(), ckpt_path=None)
    assert len(trainer.lr_scheduler_configs) == 0
    assert len(trainer.optimizers) == 0


@pytest.mark.parametrize("complete_epoch", [True, False])
def test_lr_scheduler_strict(tmp_path, complete_epoch):
    model = Boring()
    optimizer = optim.Adam(model.parameters())
    scheduler = CountingPlateau(optimizer)
    max_epochs = 1 if complete_epoch else None
    max_steps = -1 if complete_epoch else 1

    def make() -> fulmen.Trainer:
        return trainer_for(tmp_path, max_epochs=max_epochs, max_steps=max_steps,
                           limit_train_batches=4, limit_val_batches=1)

    model.configure_optimizers = lambda: {  # type: ignore[method-assign]
        "optimizer": optimizer,
        "lr_scheduler": {"scheduler": scheduler, "monitor": "giraffe", "strict": True}}
    if complete_epoch:
        with pytest.raises(ConfigurationError, match=r"ReduceLROnPlateau conditioned on metric .* "
                           r"which is not available\. Available metrics are:"):
            make().fit(model, data(), data())
    else:
        make().fit(model, data(), data())  # stopped mid-epoch: no epoch-end scheduler step
    assert scheduler.calls == 0

    model.configure_optimizers = lambda: {  # type: ignore[method-assign]
        "optimizer": optimizer,
        "lr_scheduler": {"scheduler": scheduler, "monitor": "giraffe", "strict": False}}
    if complete_epoch:
        with pytest.warns(RuntimeWarning, match=r"ReduceLROnPlateau conditioned on metric .* "
                          r"which is not available but strict"):
            make().fit(model, data(), data())
    assert scheduler.calls == 0


def test_unknown_configure_optimizers_raises(tmp_path):
    with pytest.raises(ConfigurationError, match=r"returned 1: a int is not one of the accepted "
                       r"forms. Return an optimizer; a list or tuple of optimizers"):
        fast(tmp_path).fit(returning(lambda m: 1), data())


def test_optimizer_config_dict_with_extra_keys_warns(tmp_path):
    def conf(m: Boring) -> Any:
        optimizer = optim.Adam(m.parameters())
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": optim.lr_scheduler.StepLR(optimizer, 1)},
                "foo": 1, "bar": 2}

    with pytest.warns(RuntimeWarning,
                      match=r"Found unsupported keys in the optimizer configuration: \{.+\}"):
        fast(tmp_path).fit(returning(conf), data())


def test_multiple_optimizer_config_dicts_with_extra_keys_warns(tmp_path):
    def conf(m: Boring) -> Any:
        optimizer1 = optim.Adam(m.parameters(), lr=0.01)
        optimizer2 = optim.Adam(m.parameters(), lr=0.01)
        config_1 = {"scheduler": optim.lr_scheduler.StepLR(optimizer1, 1)}
        config_2 = {"scheduler": optim.lr_scheduler.StepLR(optimizer2, 1)}
        return [{"optimizer": optimizer1, "lr_scheduler": config_1, "foo": 1, "bar": 2},
                {"optimizer": optimizer2, "lr_scheduler": config_2, "foo": 1, "bar": 2}]

    class Manual(Boring):
        def training_step(self, batch: Any, batch_idx: int) -> None:
            for opt in self.optimizers():
                opt.zero_grad()
                self.manual_backward(self.step(batch))
                opt.step()

    model = Manual()
    model.automatic_optimization = False
    model.configure_optimizers = lambda: conf(model)  # type: ignore[method-assign]
    with pytest.warns(RuntimeWarning,
                      match=r"Found unsupported keys in the optimizer configuration: \{.+\}"):
        fast(tmp_path).fit(model, data())


def test_lr_scheduler_with_extra_keys_warns(tmp_path):
    def conf(m: Boring) -> Any:
        optimizer = optim.Adam(m.parameters())
        return {"optimizer": optimizer, "lr_scheduler": {
            "scheduler": optim.lr_scheduler.StepLR(optimizer, 1), "foo": 1, "bar": 2}}

    with pytest.warns(RuntimeWarning,
                      match=r"Found unsupported keys in the lr scheduler dict: \{.+\}"):
        fast(tmp_path).fit(returning(conf), data())


def test_none_optimizer(tmp_path):
    model = Boring()
    model.configure_optimizers = lambda: None  # type: ignore[method-assign]
    trainer = trainer_for(tmp_path, limit_val_batches=0.1, limit_train_batches=0.2)
    with pytest.warns(UserWarning, match="will run with no optimizer"):
        trainer.fit(model, data(), data())


def test_lr_scheduler_with_no_actual_scheduler_raises(tmp_path):
    model = returning(lambda m: {"optimizer": optim.Adam(m.parameters()), "lr_scheduler": {}})
    with pytest.raises(ConfigurationError, match=r"the lr_scheduler dict has no 'scheduler' "
                       r"\(given: \[\]\)"):
        fast(tmp_path).fit(model, data())


def test_invalid_optimizer_in_scheduler(tmp_path):
    class InvalidOptimizerModel(Boring):
        def configure_optimizers(self) -> Any:
            opt1 = optim.SGD(self.layer.parameters(), lr=0.1)
            opt2 = optim.SGD(self.layer.parameters(), lr=0.1)
            return [opt1], [optim.lr_scheduler.StepLR(opt2, step_size=1)]

    with pytest.raises(ConfigurationError, match="StepLR is attached to an optimizer that "
                       "configure_optimizers did not return"):
        fast(tmp_path).fit(InvalidOptimizerModel(), data())


def test_invalid_optimizer_dict_raises(tmp_path):
    class DummyModel(Boring):
        def configure_optimizers(self) -> Any:
            return [{"optimizer": optim.Adam(self.parameters())}, optim.Adam(self.parameters())]

    with pytest.raises(ConfigurationError, match="a list is not one of the accepted forms"):
        fast(tmp_path).fit(DummyModel(), data())


@pytest.mark.parametrize("check_val_every_n_epoch", [1, 2])
def test_lr_scheduler_epoch_step_frequency(tmp_path, check_val_every_n_epoch):
    epochs = 4
    expected_steps = epochs + 1  # every LRScheduler gets called once at init

    class Model(Boring):
        def configure_optimizers(self) -> Any:
            optimizer = optim.SGD(self.layer.parameters(), lr=0.1)
            return [optimizer], [CountingStepLR(optimizer, step_size=1)]

    trainer = trainer_for(tmp_path, limit_train_batches=2, limit_val_batches=2,
                          check_val_every_n_epoch=check_val_every_n_epoch, max_epochs=epochs)
    trainer.fit(Model(), data(), data())
    assert trainer.lr_scheduler_configs[0].scheduler.calls == expected_steps


@pytest.mark.parametrize(("every_n_train_steps", "epoch_interval"),
                         [(None, True), (2, False), (2, True)])
def test_lr_scheduler_state_updated_before_saving(tmp_path, every_n_train_steps,
                                                  epoch_interval):
    batches = 2
    max_epochs = 1
    lr, gamma = 1, 10
    trainer = trainer_for(tmp_path, max_epochs=max_epochs, limit_train_batches=batches,
                          limit_val_batches=1, callbacks=[ModelCheckpoint(
                              dirpath=tmp_path, every_n_train_steps=every_n_train_steps)])

    class TestModel(Boring):
        on_save_checkpoint_called = False

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD(self.parameters(), lr=lr)
            lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=gamma)
            lr_scheduler_config: dict[str, Any] = {"scheduler": lr_scheduler}
            if not epoch_interval:
                lr_scheduler_config["interval"] = "step"
            return [optimizer], [lr_scheduler_config]

        def on_save_checkpoint(self, checkpoint: dict) -> None:
            lr_scheduler_config = checkpoint["lr_schedulers"][0]
            assert self.trainer.global_step == batches
            compare_to = max_epochs if epoch_interval else batches
            assert lr_scheduler_config["_step_count"] - 1 == compare_to  # starts at 1
            assert lr_scheduler_config["_last_lr"] == [lr * gamma**compare_to]
            self.on_save_checkpoint_called = True

    model = TestModel()
    trainer.fit(model, data(), data())
    assert model.on_save_checkpoint_called


@pytest.mark.parametrize("save_on_train_epoch_end", [False, True])
def test_plateau_scheduler_lr_step_interval_updated_after_saving(tmp_path,
                                                                 save_on_train_epoch_end):
    batches = 4
    trainer = trainer_for(tmp_path, max_epochs=1, limit_train_batches=batches,
                          limit_val_batches=1, callbacks=[ModelCheckpoint(
                              dirpath=tmp_path, save_on_train_epoch_end=save_on_train_epoch_end)])

    class Model(Boring):
        on_save_checkpoint_called = False

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            self.log("foo", batch_idx)
            return super().training_step(batch, batch_idx)

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.Adam(self.parameters())
            lr_scheduler1 = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
            config_1 = {"scheduler": lr_scheduler1, "interval": "step", "monitor": "foo"}
            lr_scheduler2 = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
            config_2 = {"scheduler": lr_scheduler2, "interval": "step"}
            return [optimizer], [config_1, config_2]

        def on_save_checkpoint(self, checkpoint: dict) -> None:
            config_1 = checkpoint["lr_schedulers"][0]
            # Lightning steps step-interval plateau schedulers after the validation of that
            # batch (so that they may monitor a validation metric)
            assert config_1["last_epoch"] == batches - (not save_on_train_epoch_end)
            config_2 = checkpoint["lr_schedulers"][1]
            assert config_2["_step_count"] - 1 == batches  # step count starts at 1
            self.on_save_checkpoint_called = True

    model = Model()
    trainer.fit(model, data(), data())
    assert model.on_save_checkpoint_called


def test_lr_scheduler_step_hook(tmp_path):
    """A custom scheduler works, and ``lr_scheduler_step`` is called at the right times."""
    epoch_calls: list[int] = []

    class CustomEpochScheduler:
        def __init__(self, optimizer: Any) -> None:
            self.optimizer = optimizer

        def step(self, epoch: int) -> None:
            epoch_calls.append(epoch)

        def state_dict(self) -> None: ...

        def load_state_dict(self, state_dict: Any) -> None: ...

    class CustomBoringModel(Boring):
        def lr_scheduler_step(self, scheduler: Any, metric: Any) -> None:
            if isinstance(scheduler, torch.optim.lr_scheduler.StepLR):  # step-level
                super().lr_scheduler_step(scheduler, metric)
            elif isinstance(scheduler, CustomEpochScheduler):  # epoch-level, custom
                scheduler.step(epoch=self.current_epoch)

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD(self.layer.parameters(), lr=1e-2)
            lr_scheduler1 = {"scheduler": CountingStepLR(optimizer, step_size=1),
                             "interval": "step"}
            lr_scheduler2 = CustomEpochScheduler(optimizer)
            return [optimizer], [lr_scheduler1, lr_scheduler2]

    max_epochs = 3
    limit_train_batches = 2
    trainer = trainer_for(tmp_path, enable_checkpointing=False, max_epochs=max_epochs,
                          limit_train_batches=limit_train_batches, limit_val_batches=0)
    trainer.fit(CustomBoringModel(), data())
    assert epoch_calls == list(range(max_epochs))
    # the first step is called by torch's LRScheduler.__init__
    assert trainer.lr_scheduler_configs[0].scheduler.calls == \
        max_epochs * limit_train_batches + 1


def test_invalid_scheduler_missing_state_dict(tmp_path):
    class CustomScheduler:
        def __init__(self, optimizer: Any) -> None:
            self.optimizer = optimizer

        def step(self) -> None: ...

    def conf(m: Boring) -> Any:
        opt = torch.optim.SGD(m.parameters(), lr=1e-2)
        return {"optimizer": opt, "lr_scheduler": CustomScheduler(opt)}

    with pytest.raises(ConfigurationError, match="CustomScheduler is not a learning-rate "
                       "scheduler"):
        fast(tmp_path).fit(returning(conf), data())


@pytest.mark.parametrize("override", [False, True])
def test_invalid_lr_scheduler_with_custom_step_method(tmp_path, override):
    """A custom scheduler whose ``step`` breaks the API needs a ``lr_scheduler_step``."""
    stepped: list[Any] = []

    class CustomScheduler:
        def __init__(self, optimizer: Any) -> None:
            self.optimizer = optimizer

        def step(self, foobar: Any) -> None:  # breaks the API
            stepped.append(foobar)

        def state_dict(self) -> dict:
            return {}

        def load_state_dict(self, state_dict: Any) -> None: ...

    class CustomBoringModel(Boring):
        def configure_optimizers(self) -> Any:
            opt = torch.optim.SGD(self.parameters(), lr=1e-2)
            return {"optimizer": opt, "lr_scheduler": CustomScheduler(opt)}

    class Overriding(CustomBoringModel):
        def lr_scheduler_step(self, scheduler: Any, metric: Any) -> None:
            scheduler.step(foobar=self.current_epoch)

    trainer = trainer_for(tmp_path, max_epochs=2, limit_train_batches=2, limit_val_batches=0,
                          enable_checkpointing=False)
    if override:
        trainer.fit(Overriding(), data())
        assert stepped == [0, 1]
    else:
        with pytest.raises(ConfigurationError, match=r"CustomScheduler\.step\(\) cannot be "
                           r"called without arguments.*Override lr_scheduler_step"):
            trainer.fit(CustomBoringModel(), data())
        assert stepped == []
