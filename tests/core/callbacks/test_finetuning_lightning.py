"""Lightning's ``tests_pytorch/callbacks/test_finetuning_callback.py``, ported.

Differences, on purpose:
- fulmen restores the callback's parameter groups in ``on_load_checkpoint`` (fulmen loads the
  optimizer states right after the callbacks' states, before ``on_fit_start``); the resume
  tests check the same thing as Lightning's: the groups exist again before the optimizer
  state is loaded.
- ``filter_on_optimizer`` skips the parameters the optimizer already holds by identity
  (Lightning compares values with ``torch.equal``, which also skips an unrelated parameter
  that happens to hold equal values).
- A module without a ``backbone`` is a ``ConfigurationError`` at ``setup`` (Lightning:
  ``MisconfigurationException`` at ``on_fit_start``, after an ``AttributeError`` in set-up).
- ``test_unsupported_strategies`` reads ``Strategy.shards_parameters``: FSDP is refused too
  (Lightning refuses only DeepSpeed, by class).
"""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch import nn
from torch.optim import SGD, Optimizer
from torch.utils.data import DataLoader

import fulmen
from fulmen import ConfigurationError
from fulmen.callbacks import BackboneFinetuning, BaseFinetuning, ModelCheckpoint

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}


class TestBackboneFinetuningCallback(BackboneFinetuning):
    def on_train_epoch_start(self, trainer, pl_module):
        super().on_train_epoch_start(trainer, pl_module)
        epoch = trainer.current_epoch
        if self.unfreeze_backbone_at_epoch <= epoch:
            current_lr = trainer.optimizers[0].param_groups[0]["lr"]
            backbone_lr = self.previous_backbone_lr
            if epoch < 6:
                assert backbone_lr <= current_lr
            else:
                assert backbone_lr == current_lr


def test_finetuning_callback(tmp_path):
    fulmen.seed_everything(42)

    class FinetuningBoringModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(32, 32, bias=False), nn.BatchNorm1d(32),
                                          nn.ReLU())
            self.layer = torch.nn.Linear(32, 2)
            self.backbone.has_been_used = False

        def forward(self, x):
            self.backbone.has_been_used = True
            return self.layer(self.backbone(x))

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1,
                                                                 gamma=0.7)]

        def train_dataloader(self):
            return DataLoader(RandomDataset(32, 64), batch_size=2)

    model = FinetuningBoringModel()
    callback = TestBackboneFinetuningCallback(unfreeze_backbone_at_epoch=3, verbose=False)
    trainer = fulmen.Trainer(limit_train_batches=4, limit_val_batches=1, default_root_dir=tmp_path,
                             callbacks=[callback], max_epochs=8, **QUIET)
    trainer.fit(model)
    assert model.backbone.has_been_used
    assert len(trainer.optimizers[0].param_groups) == 2  # the backbone's group was added


class TestBackboneFinetuningWarningCallback(BackboneFinetuning):
    def finetune_function(self, pl_module, epoch: int, optimizer):
        if epoch == 0:
            self.unfreeze_and_add_param_group(pl_module.backbone, optimizer, 0.1,
                                              train_bn=self.train_bn,
                                              initial_denom_lr=self.initial_denom_lr)


def test_finetuning_callback_warning(tmp_path):
    fulmen.seed_everything(42)

    class FinetuningBoringModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Linear(32, 2, bias=False)
            self.layer = None
            self.backbone.has_been_used = False

        def forward(self, x):
            self.backbone.has_been_used = True
            return self.backbone(x)

        def train_dataloader(self):
            return DataLoader(RandomDataset(32, 64), batch_size=2)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    chk = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    model = FinetuningBoringModel()
    model.validation_step = None
    callback = TestBackboneFinetuningWarningCallback(unfreeze_backbone_at_epoch=3, verbose=False)
    trainer = fulmen.Trainer(limit_train_batches=1, limit_val_batches=0, default_root_dir=tmp_path,
                             callbacks=[callback, chk], max_epochs=2, **QUIET)
    with pytest.warns(UserWarning, match="Did you init your optimizer in"):
        trainer.fit(model)
    assert model.backbone.has_been_used
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=3, limit_val_batches=0,
                             limit_train_batches=1, **QUIET)
    trainer.fit(model, ckpt_path=chk.last_model_path)


def test_freeze_unfreeze_function():
    class FreezeModel(fulmen.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(32, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                          nn.Linear(32, 2))

    model = FreezeModel()
    assert model.backbone[1].track_running_stats
    BaseFinetuning.freeze(model, train_bn=True)
    assert not model.backbone[0].weight.requires_grad
    assert model.backbone[1].weight.requires_grad
    assert model.backbone[1].track_running_stats
    assert not model.backbone[3].weight.requires_grad

    BaseFinetuning.freeze(model, train_bn=False)
    assert not model.backbone[0].weight.requires_grad
    assert not model.backbone[1].weight.requires_grad
    assert not model.backbone[1].track_running_stats
    assert not model.backbone[3].weight.requires_grad

    BaseFinetuning.make_trainable(model)
    assert model.backbone[0].weight.requires_grad
    assert model.backbone[1].weight.requires_grad
    assert model.backbone[1].track_running_stats
    assert model.backbone[3].weight.requires_grad

    BaseFinetuning.freeze(model.backbone[0], train_bn=False)
    assert not model.backbone[0].weight.requires_grad

    BaseFinetuning.freeze(([(model.backbone[1]), [model.backbone[3]]]), train_bn=True)
    assert model.backbone[1].weight.requires_grad
    assert model.backbone[1].track_running_stats
    assert not model.backbone[3].weight.requires_grad


def test_unfreeze_and_add_param_group_function():
    class FreezeModel(fulmen.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(*[nn.Linear(32, 32, bias=False) for _ in range(5)],
                                          nn.BatchNorm1d(32))

    model = FreezeModel()
    optimizer = SGD(model.backbone[0].parameters(), lr=0.01)

    with pytest.warns(UserWarning, match="The provided params to be frozen already"):
        BaseFinetuning.unfreeze_and_add_param_group(model.backbone[0], optimizer=optimizer)
    assert optimizer.param_groups[0]["lr"] == 0.01

    model.backbone[1].weight.requires_grad = False
    BaseFinetuning.unfreeze_and_add_param_group(model.backbone[1], optimizer=optimizer)
    assert len(optimizer.param_groups) == 2
    assert optimizer.param_groups[1]["lr"] == 0.001
    assert optimizer.param_groups[1]["params"][0] is model.backbone[1].weight
    assert model.backbone[1].weight.requires_grad

    with pytest.warns(UserWarning, match="The provided params to be frozen already"):
        BaseFinetuning.unfreeze_and_add_param_group(model, optimizer=optimizer, lr=100,
                                                    train_bn=False)
    assert len(optimizer.param_groups) == 3
    assert optimizer.param_groups[2]["lr"] == 100
    assert optimizer.param_groups[2]["params"] == [model.backbone[i].weight for i in (2, 3, 4)]
    assert optimizer.param_groups[0]["params"][0] is model.backbone[0].weight


class OnEpochLayerFinetuning(BaseFinetuning):
    def freeze_before_training(self, pl_module: fulmen.Module):
        self.freeze(pl_module.layer)

    def finetune_function(self, pl_module: fulmen.Module, epoch: int, optimizer: Optimizer):
        self.unfreeze_and_add_param_group(pl_module.layer[epoch + 1], optimizer)


def test_base_finetuning_internal_optimizer_metadata(tmp_path):
    fulmen.seed_everything(42)

    class FreezeModel(BoringModel):
        def __init__(self):
            super().__init__()
            self.layer = nn.Sequential(*[nn.Linear(32, 32, bias=bool(i % 2)) for i in range(5)],
                                       nn.Linear(32, 2, bias=True))

        def forward(self, x):
            return self.layer(x)

        def configure_optimizers(self):
            return torch.optim.SGD(self.layer[0].parameters(), lr=0.1)

    cb = OnEpochLayerFinetuning()
    chk = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=5, limit_train_batches=1,
                             limit_val_batches=1, callbacks=[cb, chk], **QUIET)
    trainer.fit(FreezeModel())
    metadata = cb._internal_optimizer_metadata[0]
    assert len(metadata) == 6
    assert [g["params"] for g in metadata] == [
        ["layer.0.weight"], ["layer.1.weight", "layer.1.bias"], ["layer.2.weight"],
        ["layer.3.weight", "layer.3.bias"], ["layer.4.weight"], ["layer.5.weight", "layer.5.bias"]]

    cb = OnEpochLayerFinetuning()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=10, limit_train_batches=1,
                             limit_val_batches=1, callbacks=[cb], **QUIET)
    with pytest.raises(IndexError, match="index 6 is out of range"):
        trainer.fit(FreezeModel(), ckpt_path=chk.last_model_path)


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.act = nn.ReLU()
        self.bn = nn.BatchNorm2d(out_channels)


class ConvBlockParam(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.module_dict = nn.ModuleDict({"conv": nn.Conv2d(in_channels, out_channels, 3),
                                          "act": nn.ReLU()})
        self.parent_param = nn.Parameter(torch.zeros((1), dtype=torch.float))
        self.bn = nn.BatchNorm2d(out_channels)


def test_complex_nested_model():
    model = nn.Sequential(OrderedDict([
        ("encoder", nn.Sequential(ConvBlockParam(3, 64), ConvBlock(64, 128))),
        ("decoder", ConvBlock(128, 10)),
    ]))
    assert len(BaseFinetuning.flatten_modules(model)) == 10

    BaseFinetuning.freeze(model.encoder, train_bn=True)
    assert not model.encoder[0].module_dict["conv"].weight.requires_grad
    assert not model.encoder[0].parent_param.requires_grad
    assert model.encoder[0].bn.weight.requires_grad

    BaseFinetuning.make_trainable(model)
    assert len(list(BaseFinetuning.filter_params(model.encoder, train_bn=True))) == 9


class TestCallbacksRestoreCallback(BaseFinetuning):
    def freeze_before_training(self, pl_module):
        self.freeze(pl_module.layer[:3])

    def finetune_function(self, pl_module, epoch, optimizer):
        if epoch >= 1:
            self.unfreeze_and_add_param_group(pl_module.layer[epoch - 1], optimizer)


class FinetuningBoringModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.layer = nn.Sequential(nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32),
                                   nn.Linear(32, 2))

    def configure_optimizers(self):
        return torch.optim.SGD(filter(lambda x: x.requires_grad, self.parameters()), lr=0.1)


def test_callbacks_restore(tmp_path):
    """The parameter groups come back after the optimizers are re-created and before their
    states load (a mismatch would make ``load_state_dict`` fail)."""
    chk = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    callback = TestCallbacksRestoreCallback()
    trainer_kwargs = {"default_root_dir": tmp_path, "limit_train_batches": 1,
                      "limit_val_batches": 1, "callbacks": [callback, chk], "max_epochs": 2,
                      **QUIET}
    model = FinetuningBoringModel()
    fulmen.Trainer(**trainer_kwargs).fit(model)

    metadata = callback._internal_optimizer_metadata
    assert len(metadata) == 1 and len(metadata[0]) == 2
    defaults = {k: v for k, v in SGD([torch.zeros(1, requires_grad=True)]).defaults.items()}
    assert metadata[0][0] == {**defaults, "lr": 0.1, "params": ["layer.3.weight", "layer.3.bias"]}
    assert metadata[0][1] == {**defaults, "lr": 0.01, "params": ["layer.0.weight", "layer.0.bias"]}

    trainer_kwargs["max_epochs"] = 3
    trainer = fulmen.Trainer(**trainer_kwargs)
    trainer.fit(model, ckpt_path=chk.last_model_path)
    assert len(trainer.optimizers[0].param_groups) == 3


class BackboneBoringModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(32, 2)
        self.backbone = nn.Linear(32, 32)

    def forward(self, x):
        return self.layer(self.backbone(x))


def test_callbacks_restore_backbone(tmp_path):
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    common = {"default_root_dir": tmp_path, "limit_train_batches": 1, "limit_val_batches": 1,
              "logger": False, "enable_progress_bar": False, "enable_model_summary": False}
    trainer = fulmen.Trainer(max_epochs=2, **common,
                             callbacks=[ckpt, BackboneFinetuning(unfreeze_backbone_at_epoch=1)])
    trainer.fit(BackboneBoringModel())
    trainer = fulmen.Trainer(max_epochs=3, **common,
                             callbacks=BackboneFinetuning(unfreeze_backbone_at_epoch=1))
    trainer.fit(BackboneBoringModel(), ckpt_path=ckpt.last_model_path)


def test_backbone_required(tmp_path):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, **QUIET,
                             callbacks=[BackboneFinetuning()])
    with pytest.raises(ConfigurationError, match=r"should have a nn\.Module `backbone`"):
        trainer.fit(BoringModel())
    with pytest.raises(ConfigurationError, match="unfreeze_backbone_at_epoch=-1"):
        BackboneFinetuning(unfreeze_backbone_at_epoch=-1)


@pytest.mark.parametrize("strategy", ["fsdp", "deepspeed"])
def test_unsupported_strategies(strategy):
    """Strategies that shard parameters or optimizer state (``Strategy.shards_parameters``)
    are refused at set-up (Lightning: DeepSpeed only, by class)."""
    if strategy == "deepspeed":
        pytest.importorskip("deepspeed")
    trainer = fulmen.Trainer(accelerator="cpu", strategy=strategy, devices=1, **QUIET)
    with pytest.raises(ConfigurationError, match="does not support running with strategy"):
        BackboneFinetuning().setup(trainer, BackboneBoringModel(), "fit")
