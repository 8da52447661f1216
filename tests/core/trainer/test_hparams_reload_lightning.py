"""Rebuilding a module from its checkpoint as Lightning does (``lightning/pytorch/core/saving.py``:
``_load_from_checkpoint``/``_load_state``), and ``save_hyperparameters`` as Lightning records it.
Ported from Lightning's ``tests_pytorch/models/test_hparams.py`` (``test_load_past_checkpoint``,
``test_model_ignores_non_exist_kwargument``, ``test_args``, ``test_init_arg_with_runtime_change``,
``test_collect_init_arguments_with_local_vars``, ``test_hparams_ignore_in_subclass_overrides_base``,
``test_save_no_parameters``, ``test_empty_hparams_container``, ``test_hparams_name_from_container``)
and ``tests_pytorch/trainer/test_trainer.py`` (``test_no_val_module`` and
``test_strict_model_load``: ``load_from_checkpoint(hparams_file=...)``).

Deliberate differences:
- ``test_init_arg_with_runtime_change`` reads the ``hparams.yaml`` of a ``CSVLogger`` (Lightning:
  TensorBoard's; both write the file the same way).
- A dict saved with ``save_hyperparameters(config)`` comes back as an ``AttributeDict`` (a
  ``dict`` subclass; Lightning gives a plain ``dict``).
- ``save_hyperparameters()`` before ``super().__init__()`` warns once that the values will not
  be logged (Lightning silently does not log them).
"""

from __future__ import annotations

import os
from argparse import Namespace

import pytest
import torch
import yaml
from boring import BoringModel

import fulmen
from fulmen import Module
from fulmen.callbacks import ModelCheckpoint
from fulmen.hparams import (
    load_hparams_from_tags_csv,
    load_hparams_from_yaml,
    save_hparams_to_tags_csv,
)
from fulmen.loggers import CSVLogger


def _fit(tmp_path, model, **kwargs):
    flags = {"default_root_dir": tmp_path, "max_epochs": 1, "limit_train_batches": 2,
             "limit_val_batches": 0, "enable_progress_bar": False, "enable_model_summary": False,
             "logger": CSVLogger(tmp_path), "callbacks": [ModelCheckpoint(dirpath=tmp_path / "ckpt")],
             **kwargs}
    trainer = fulmen.Trainer(**flags)
    trainer.fit(model)
    return trainer


def _raw_checkpoint_path(trainer) -> str:
    return trainer.checkpoint_callback.best_model_path


class KwargsModel(BoringModel):
    """The shape of the issue: every hyper-parameter arrives through ``**kwargs``."""

    def __init__(self, **kwargs):
        super().__init__()
        self.save_hyperparameters()
        self.width = kwargs.get("width", 32)
        self.layer = torch.nn.Linear(32, self.width)
        self.head = torch.nn.Linear(self.width, 2)

    def forward(self, x):
        return self.head(self.layer(x))


def test_kwargs_module_is_rebuilt_with_its_saved_hyperparameters(tmp_path):
    trainer = _fit(tmp_path, KwargsModel(width=16))
    path = _raw_checkpoint_path(trainer)
    raw = torch.load(path, weights_only=True)
    assert raw[Module.CHECKPOINT_HYPER_PARAMS_KEY] == {"width": 16}
    assert raw[Module.CHECKPOINT_HYPER_PARAMS_NAME] == "kwargs"  # as Lightning writes it
    loaded = KwargsModel.load_from_checkpoint(path)
    assert loaded.width == 16 and loaded.hparams.width == 16
    assert KwargsModel.load_from_checkpoint(path, width=16, extra=1).hparams.extra == 1


def test_lightning_checkpoint_of_a_kwargs_module(tmp_path):
    """A checkpoint as Lightning 2.6 writes it for that module (``hparams_name: "kwargs"``,
    which is not an argument of ``__init__``): the values go back one by one."""
    model = KwargsModel(width=16)
    path = tmp_path / "lightning.ckpt"
    torch.save({"pytorch-lightning_version": "2.6.6", "epoch": 0, "global_step": 1,
                "state_dict": model.state_dict(), "hparams_name": "kwargs",
                "hyper_parameters": {"width": 16}}, path)
    assert KwargsModel.load_from_checkpoint(path).width == 16


def test_checkpoint_keys_are_the_class_constants(tmp_path):
    assert (Module.CHECKPOINT_HYPER_PARAMS_KEY, Module.CHECKPOINT_HYPER_PARAMS_NAME,
            Module.CHECKPOINT_HYPER_PARAMS_TYPE) == ("hyper_parameters", "hparams_name", "hparams_type")

    class OwnKeys(KwargsModel):
        CHECKPOINT_HYPER_PARAMS_KEY = "my_hyper_parameters"
        CHECKPOINT_HYPER_PARAMS_NAME = "my_hparams_name"

    path = _raw_checkpoint_path(_fit(tmp_path, OwnKeys(width=8)))
    raw = torch.load(path, weights_only=True)
    assert raw["my_hyper_parameters"] == {"width": 8} and raw["my_hparams_name"] == "kwargs"
    assert "hyper_parameters" not in raw
    assert OwnKeys.load_from_checkpoint(path).width == 8


class CustomBoringModel(BoringModel):
    def __init__(self, batch_size=64):
        super().__init__()
        self.save_hyperparameters()


@pytest.mark.parametrize("past_key", ["module_arguments"])
def test_load_past_checkpoint(tmp_path, past_key):
    model = CustomBoringModel()
    trainer = _fit(tmp_path, model)

    # make sure the raw checkpoint saved the properties
    raw_checkpoint_path = _raw_checkpoint_path(trainer)
    raw_checkpoint = torch.load(raw_checkpoint_path, weights_only=True)
    raw_checkpoint[past_key] = raw_checkpoint[Module.CHECKPOINT_HYPER_PARAMS_KEY]
    raw_checkpoint["hparams_type"] = "Namespace"
    raw_checkpoint[past_key]["batch_size"] = -17
    del raw_checkpoint[Module.CHECKPOINT_HYPER_PARAMS_KEY]
    # save back the checkpoint
    torch.save(raw_checkpoint, raw_checkpoint_path)

    # verify that model loads correctly
    model2 = CustomBoringModel.load_from_checkpoint(raw_checkpoint_path)
    assert model2.hparams.batch_size == -17


def test_model_ignores_non_exist_kwargument(tmp_path):
    """Test that the model takes only valid class arguments."""

    class LocalModel(BoringModel):
        def __init__(self, batch_size=15):
            super().__init__()
            self.save_hyperparameters()

    model = LocalModel()
    assert model.hparams.batch_size == 15
    trainer = _fit(tmp_path, model)

    # verify that we can overwrite whatever we want
    raw_checkpoint_path = _raw_checkpoint_path(trainer)
    model = LocalModel.load_from_checkpoint(raw_checkpoint_path, non_exist_kwarg=99)
    assert "non_exist_kwarg" not in model.hparams


class SuperClassPositionalArgs(BoringModel):
    def __init__(self, hparams):
        super().__init__()
        self._hparams = hparams  # pretend BoringModel did not call self.save_hyperparameters()


class SubClassVarArgs(SuperClassPositionalArgs):
    """Loading this model should accept hparams and init in the super class."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)


def test_args(tmp_path):
    """Test for inheritance: super class takes positional arg, subclass takes varargs."""
    hparams = {"test": 1}
    model = SubClassVarArgs(hparams)
    trainer = _fit(tmp_path, model)

    raw_checkpoint_path = _raw_checkpoint_path(trainer)
    with pytest.raises(TypeError, match=r"__init__\(\) got an unexpected keyword argument 'test'"):
        SubClassVarArgs.load_from_checkpoint(raw_checkpoint_path)


class RuntimeParamChangeModelSaving(BoringModel):
    def __init__(self, **kwargs):
        super().__init__()
        self.save_hyperparameters()


def test_init_arg_with_runtime_change(tmp_path):
    """Test that we save/export only the initial hparams, no other runtime change allowed."""
    model = RuntimeParamChangeModelSaving(running_arg=123)
    assert model.hparams.running_arg == 123
    model.hparams.running_arg = -1
    assert model.hparams.running_arg == -1
    trainer = _fit(tmp_path, model, enable_checkpointing=False, callbacks=[])
    path_yaml = os.path.join(trainer.logger.log_dir, trainer.logger.experiment.NAME_HPARAMS_FILE)
    hparams = load_hparams_from_yaml(path_yaml)
    assert hparams.get("running_arg") == 123


class LocalVariableModelSuperFirst(BoringModel):
    """This model has the save_hyperparameters() call at the end."""

    def __init__(self, arg1, arg2, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.argument1 = arg1  # arg2 intentionally not set
        arg1 = "overwritten"
        local_var = 1234  # noqa: F841
        self.save_hyperparameters()  # this is intentionally here at the end


def test_collect_init_arguments_with_local_vars():
    """Tests that only the arguments are collected and not local variables."""
    model = LocalVariableModelSuperFirst(arg1=1, arg2=2)
    assert "local_var" not in model.hparams
    assert model.hparams["arg1"] == "overwritten"
    assert model.hparams["arg2"] == 2


@pytest.mark.parametrize("ignore", ["arg2", ("arg2", "arg3")])
def test_hparams_ignore_in_subclass_overrides_base(ignore):
    """Hyperparameters can be ignored when `save_hyperparameters` is called in both a base class and a subclass,
    and ignore rules defined in the subclass override hyperparameters saved by the base class."""

    class BaseBoringModel(BoringModel):
        def __init__(self, arg1, arg2, arg3):
            super().__init__()
            self.save_hyperparameters(ignore="arg1")

    class LocalModel(BaseBoringModel):
        def __init__(self, arg1, arg2, arg3):
            super().__init__(arg1=arg1, arg2=arg2, arg3=arg3)
            self.save_hyperparameters(ignore=ignore)

    model = LocalModel(arg1=14, arg2=90, arg3=50)

    # `arg1` was ignored by the base class, but the subclass did not ignore it, so it should be present.
    assert model.hparams.arg1 == 14
    ignore_args = ignore if isinstance(ignore, (list, tuple)) else [ignore]
    for arg in ignore_args:
        assert arg not in model.hparams
        assert arg not in model.hparams_initial


class IgnoreAllParametersModel(BoringModel):
    def __init__(self, arg1, arg2, arg3):
        super().__init__()
        self.save_hyperparameters(ignore=("arg1", "arg2", "arg3"))


class NoParametersModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.save_hyperparameters()


@pytest.mark.parametrize("model", [IgnoreAllParametersModel(arg1=14, arg2=90, arg3=50), NoParametersModel()])
def test_save_no_parameters(model):
    """Test that calling save_hyperparameters works if no parameters need saving."""
    assert model.hparams == {}
    assert model.hparams_initial == {}
    assert model.hparams_name is None


class HparamsKwargsContainerModel(BoringModel):
    def __init__(self, **kwargs):
        super().__init__()
        self.save_hyperparameters(kwargs)


class HparamsNamespaceContainerModel(BoringModel):
    def __init__(self, config):
        super().__init__()
        self.save_hyperparameters(config)


def test_empty_hparams_container():
    """Test that save_hyperparameters() is a no-op when saving an empty hparams container."""
    model = HparamsKwargsContainerModel()
    assert not model.hparams
    model = HparamsNamespaceContainerModel(Namespace())
    assert not model.hparams


def test_hparams_name_from_container(tmp_path):
    """Test that save_hyperparameters(container) captures the name of the argument correctly."""
    model = HparamsKwargsContainerModel(a=1, b=2)
    assert model.hparams_name is None
    model = HparamsNamespaceContainerModel(Namespace(a=1, b=2))
    assert model.hparams_name == "config"
    # an equal copy of the argument names it too (Lightning compares with ==)
    model = HparamsNamespaceContainerModel.__new__(HparamsNamespaceContainerModel)
    HparamsNamespaceContainerModel.__init__(model, {"a": 1})
    assert model.hparams_name == "config"
    loaded = HparamsNamespaceContainerModel.load_from_checkpoint(
        _raw_checkpoint_path(_fit(tmp_path, HparamsNamespaceContainerModel(Namespace(a=1, b=2)))), b=3)
    assert loaded.hparams == {"a": 1, "b": 3} and loaded.hparams_name == "config"


class EarlySaving(BoringModel):
    def __init__(self, width=32, **kwargs):
        self.save_hyperparameters()  # before super().__init__(), as Lightning allows
        super().__init__()
        self.width = width


def test_save_hyperparameters_before_super_init(tmp_path):
    """Lightning allows it: the values are kept (checkpoints, reload); its base ``__init__``
    then turns their logging off, which fulmen does too, with a warning that says so."""
    with pytest.warns(UserWarning, match=r"before super\(\).__init__\(\).*not sent to the loggers"):
        model = EarlySaving(width=16, extra=3)
    assert model.hparams == {"width": 16, "extra": 3} and model.hparams_name == "kwargs"
    trainer = _fit(tmp_path, model)
    assert not os.path.exists(os.path.join(trainer.logger.log_dir, "hparams.yaml"))
    loaded = EarlySaving.load_from_checkpoint(_raw_checkpoint_path(trainer))
    assert loaded.width == 16 and loaded.hparams.extra == 3


def test_no_val_module(tmp_path):
    """``load_from_checkpoint(hparams_file=...)``: the logger's ``hparams.yaml`` gives the
    hyper-parameters (Lightning's ``test_no_val_module``)."""

    class CustomModel(BoringModel):
        def __init__(self, lr=1e-2):
            super().__init__()
            self.save_hyperparameters()

    lr = 1e-3
    model = CustomModel(lr=lr)
    trainer = _fit(tmp_path, model, max_steps=1)
    assert trainer.state.finished, f"Training failed with {trainer.state}"
    new_weights_path = os.path.join(tmp_path, "save_test.ckpt")
    trainer.save_checkpoint(new_weights_path)
    ckpt = torch.load(new_weights_path, weights_only=True)
    assert Module.CHECKPOINT_HYPER_PARAMS_KEY in ckpt, "hyper_parameters missing from checkpoints"

    hparams_path = os.path.join(trainer.logger.log_dir, "hparams.yaml")
    model_2 = CustomModel.load_from_checkpoint(checkpoint_path=new_weights_path, hparams_file=hparams_path)
    assert model_2.hparams.lr == lr

    # the file's values replace the checkpoint's
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"lr": 0.5}))
    assert CustomModel.load_from_checkpoint(new_weights_path, hparams_file=other).hparams.lr == 0.5
    tags = tmp_path / "tags.csv"
    save_hparams_to_tags_csv(tags, Namespace(lr=0.25))
    assert load_hparams_from_tags_csv(tags) == {"lr": 0.25}
    assert CustomModel.load_from_checkpoint(new_weights_path, hparams_file=tags).hparams.lr == 0.25
    with pytest.raises(ValueError, match=r"\.csv, \.yml or \.yaml is required"):
        CustomModel.load_from_checkpoint(new_weights_path, hparams_file=tmp_path / "h.json")
    with pytest.warns(RuntimeWarning, match="Missing Tags"):
        assert CustomModel.load_from_checkpoint(
            new_weights_path, hparams_file=tmp_path / "missing.yaml").hparams.lr == 1e-2


def test_hparams_file_is_not_an_init_argument(tmp_path):
    """``hparams_file`` is read, never passed on, even to an ``__init__`` taking ``**kwargs``."""
    path = _raw_checkpoint_path(_fit(tmp_path, KwargsModel(width=16)))
    hparams = tmp_path / "h.yaml"
    hparams.write_text(yaml.safe_dump({"width": 16, "note": "from the file"}))
    loaded = KwargsModel.load_from_checkpoint(path, hparams_file=str(hparams))
    assert loaded.hparams == {"width": 16, "note": "from the file"}  # no `hparams_file` key
    assert loaded.width == 16


def test_strict_model_load(tmp_path):
    """Tests use case where trainer saves the model, and user loads it from tags independently."""
    model = BoringModel()
    # Extra layer
    model.c_d3 = torch.nn.Linear(10, 12)
    trainer = _fit(tmp_path, model, max_steps=1, callbacks=[])  # (Lightning: fast_dev_run)
    assert trainer.state.finished, f"Training failed with {trainer.state}"
    new_weights_path = os.path.join(tmp_path, "save_test.ckpt")
    trainer.save_checkpoint(new_weights_path)
    hparams_path = os.path.join(trainer.logger.log_dir, "hparams.yaml")

    with pytest.raises(ValueError, match="unexpected keys"):
        BoringModel.load_from_checkpoint(checkpoint_path=new_weights_path, hparams_file=hparams_path)
    with pytest.warns(UserWarning, match="not in the model state dict but in the checkpoint"):
        BoringModel.load_from_checkpoint(checkpoint_path=new_weights_path, hparams_file=hparams_path,
                                         strict=False)


def test_empty_state_dict_warns(tmp_path):
    class NoWeights(Module):
        def __init__(self, n=1):
            super().__init__()
            self.save_hyperparameters()

    path = tmp_path / "empty.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {"n": 3}, "hparams_name": "kwargs"}, path)
    with pytest.warns(UserWarning, match="contains no parameters"):
        assert NoWeights.load_from_checkpoint(path).hparams.n == 3
