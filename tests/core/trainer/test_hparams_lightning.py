"""The relevant parts of Lightning's ``tests_pytorch/models/test_hparams.py``, ported to
fulmen, plus safe references for hyper-parameters that are modules or partials.

Deliberate differences:
- Hyper-parameters holding an ``nn.Module`` or a ``functools.partial`` are written to the
  checkpoint (and ``hparams.yaml``) as ``class_path``/``init_args`` references, so the file
  loads with ``weights_only=True``; Lightning pickles the object and needs
  ``weights_only=False``. ``load_from_checkpoint`` re-creates them.
- An object that cannot be referenced (a lambda, a class defined in a function) is still
  pickled, with a warning that names the key and the fix (``ignore=[...]``).
- OmegaConf/Hydra containers and the ``HyperparametersMixin`` composition tests are not ported
  (fulmen has no mixin; omegaconf is not a dependency).
"""

from __future__ import annotations

import functools
import os
from argparse import Namespace

import pytest
import torch
import yaml
from boring import BoringModel

import fulmen
from fulmen import DataModule
from fulmen.callbacks import ModelCheckpoint
from fulmen.loggers import CSVLogger
from fulmen.references import decode, encode


def _fit(tmp_path, model, **kwargs):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=1, limit_train_batches=2,
                             limit_val_batches=0, enable_progress_bar=False,
                             enable_model_summary=False, logger=CSVLogger(tmp_path),
                             callbacks=[ModelCheckpoint(dirpath=tmp_path / "ckpt")], **kwargs)
    trainer.fit(model)
    return trainer, trainer.checkpoint_callback.best_model_path


class SaveHparamsModel(BoringModel):
    def __init__(self, hparams):
        super().__init__()
        self.save_hyperparameters(hparams)


@pytest.mark.parametrize("hparams", [Namespace(test_arg=14), {"test_arg": 14}])
def test_container_hparams(tmp_path, hparams):
    model = SaveHparamsModel(hparams)
    assert model.hparams.test_arg == 14
    _, path = _fit(tmp_path, model)
    raw = torch.load(path, weights_only=True)
    assert raw["hyper_parameters"]["test_arg"] == 14 and raw["hparams_name"] == "hparams"
    loaded = SaveHparamsModel.load_from_checkpoint(path)
    assert loaded.hparams.test_arg == 14
    assert SaveHparamsModel.load_from_checkpoint(path, test_arg=78).hparams.test_arg == 78


def test_explicit_and_implicit_args_hparams(tmp_path):
    class Explicit(BoringModel):
        def __init__(self, test_arg, test_arg2):
            super().__init__()
            self.save_hyperparameters("test_arg")

    model = Explicit(test_arg=14, test_arg2=90)
    _, path = _fit(tmp_path, model)
    loaded = Explicit.load_from_checkpoint(path, test_arg2=123)
    assert loaded.hparams.test_arg == 14 and "test_arg2" not in loaded.hparams


@pytest.mark.parametrize("ignore", ["arg2", ("arg2", "arg3")])
def test_ignore_args_list_hparams(tmp_path, ignore):
    class LocalModel(BoringModel):
        def __init__(self, arg1, arg2, arg3):
            super().__init__()
            self.save_hyperparameters(ignore=ignore)

    model = LocalModel(arg1=14, arg2=90, arg3=50)
    ignored = [ignore] if isinstance(ignore, str) else list(ignore)
    assert model.hparams.arg1 == 14 and all(a not in model.hparams for a in ignored)
    _, path = _fit(tmp_path, model)
    assert torch.load(path, weights_only=True)["hyper_parameters"]["arg1"] == 14
    loaded = LocalModel.load_from_checkpoint(path, arg2=123, arg3=100)
    assert loaded.hparams.arg1 == 14 and all(a not in loaded.hparams for a in ignored)


def test_save_hparams_logger_false_writes_no_yaml(tmp_path):
    class Quiet(BoringModel):
        def __init__(self, lr=0.1):
            super().__init__()
            self.save_hyperparameters(logger=False)

    trainer, path = _fit(tmp_path, Quiet())
    assert not os.path.exists(os.path.join(trainer.logger.log_dir, "hparams.yaml"))
    assert torch.load(path, weights_only=True)["hyper_parameters"] == {"lr": 0.1}


class Backbone(torch.nn.Module):
    def __init__(self, width: int = 4, depth: int = 1) -> None:
        super().__init__()
        self.width, self.depth = width, depth
        self.layers = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(depth)])


SGD = functools.partial(torch.optim.SGD, lr=0.01)


class WithObjects(BoringModel):
    def __init__(self, backbone: torch.nn.Module, optimizer=SGD,
                 head: torch.nn.Module | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.backbone = backbone
        self.head = head if head is not None else torch.nn.Identity()
        self.optimizer_factory = optimizer

    def configure_optimizers(self):
        return self.optimizer_factory(self.parameters())


def test_module_and_partial_hparams_load_with_weights_only(tmp_path):
    model = WithObjects(Backbone(width=6, depth=2),
                        functools.partial(torch.optim.SGD, lr=0.05, momentum=0.9),
                        torch.nn.Linear(3, 4, bias=False))
    trainer, path = _fit(tmp_path, model)
    raw = torch.load(path, weights_only=True)  # no pickled object in the file
    hparams = raw["hyper_parameters"]
    assert hparams["backbone"] == {"class_path": f"{__name__}.Backbone",
                                   "init_args": {"width": 6, "depth": 2}}
    assert hparams["optimizer"] == {"class_path": "torch.optim.sgd.SGD", "partial": True,
                                    "init_args": {"lr": 0.05, "momentum": 0.9}}
    assert hparams["head"]["class_path"] == "torch.nn.modules.linear.Linear"

    loaded = WithObjects.load_from_checkpoint(path)  # weights_only=True by default
    assert isinstance(loaded.backbone, Backbone) and loaded.backbone.depth == 2
    assert isinstance(loaded.hparams.optimizer, functools.partial)
    assert loaded.hparams.optimizer.keywords == {"lr": 0.05, "momentum": 0.9}
    assert loaded.head.bias is None and loaded.head.weight.shape == (4, 3)
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value)

    with open(os.path.join(trainer.logger.log_dir, "hparams.yaml")) as handle:
        saved = yaml.safe_load(handle)
    assert saved["backbone"] == {"class_path": f"{__name__}.Backbone",
                                 "init_args": {"depth": 2, "width": 6}}


def test_passed_objects_are_not_recreated(tmp_path):
    model = WithObjects(Backbone(width=5))
    _, path = _fit(tmp_path, model)
    mine = Backbone(width=5)
    loaded = WithObjects.load_from_checkpoint(path, backbone=mine)
    assert loaded.backbone is mine


def test_unreferable_hparam_warns_and_is_pickled(tmp_path):
    import datetime

    model = WithObjects(Backbone(), head=datetime.date(2020, 1, 1))  # picklable, no reference
    with pytest.warns(UserWarning, match=r"'head'.*weights_only=False.*ignore=\['head'\]"):
        _, path = _fit(tmp_path, model)
    with pytest.raises(Exception, match="weights_only"):
        WithObjects.load_from_checkpoint(path)


def test_references_round_trip_and_refuse_non_modules():
    ref = encode({"a": [functools.partial(max, 1)], "b": torch.nn.ReLU()})
    assert ref["b"] == {"class_path": "torch.nn.modules.activation.ReLU",
                        "init_args": {"inplace": False}}
    again = decode(ref)
    assert isinstance(again["b"], torch.nn.ReLU) and again["a"][0](3) == 3
    with pytest.raises(fulmen.ConfigurationError, match=r"not a torch\.nn\.Module class"):
        decode({"class_path": "os.getcwd", "init_args": {}})
    with pytest.raises(fulmen.ConfigurationError, match="cannot import"):
        decode({"class_path": "no_such_package.Thing", "init_args": {}})


def test_datamodule_hparams_logged(tmp_path):
    class DM(DataModule):
        def __init__(self, batch_size=4, hidden=None):
            super().__init__()
            self.save_hyperparameters(ignore="hidden")

        def train_dataloader(self):
            return BoringModel().train_dataloader()

    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_steps=1, limit_val_batches=0,
                             enable_progress_bar=False, enable_model_summary=False,
                             logger=CSVLogger(tmp_path), enable_checkpointing=False)
    trainer.fit(BoringModel(), datamodule=DM())
    with open(os.path.join(trainer.logger.log_dir, "hparams.yaml")) as handle:
        assert yaml.safe_load(handle) == {"batch_size": 4}
