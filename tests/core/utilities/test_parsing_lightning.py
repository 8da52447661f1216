"""Lightning's ``tests_pytorch/utilities/test_parsing.py``, ported to
:mod:`fulmen.utilities.parsing` (and Lightning's ``HyperparametersMixin`` doctests).

Difference: Lightning's private ``_get_init_args`` (which also returns ``self``) is tested
through the public ``get_init_args``.
"""

from __future__ import annotations

import inspect
import threading
from argparse import Namespace
from typing import Any

import pytest
from torch.jit import ScriptModule

from fulmen import DataModule, Module, Trainer
from fulmen.utilities.hparams_mixin import HyperparametersMixin
from fulmen.utilities.parsing import (
    clean_namespace,
    collect_init_args,
    get_init_args,
    is_picklable,
    lightning_getattr,
    lightning_hasattr,
    lightning_setattr,
    parse_class_init_keys,
)

unpicklable_function = lambda: None  # noqa: E731 - a lambda is what cannot be pickled


def model_and_trainer_cases() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    class TestHparamsNamespace(Module):
        learning_rate = 1

        def __contains__(self, item: object) -> bool:
            return item == "learning_rate"

    hparams_dict = {"learning_rate": 2}

    class TestModel1(Module):  # test for namespace
        learning_rate = 0

    model1 = TestModel1()

    class TestModel2(Module):  # test for hparams namespace
        hparams = TestHparamsNamespace()

    model2 = TestModel2()

    class TestModel3(Module):  # test for hparams dict
        hparams = hparams_dict

    model3 = TestModel3()

    class TestModel4(Module):  # fail case
        batch_size = 1

    model4 = TestModel4()
    trainer1 = Trainer(logger=False, enable_progress_bar=False)
    model4.trainer = trainer1
    datamodule = DataModule()
    datamodule.batch_size = 8  # type: ignore[attr-defined]
    trainer1.datamodule = datamodule

    model5 = Module()
    model5.trainer = trainer1

    class TestModel6(Module):  # datamodule, hparams without the attribute: the datamodule's
        hparams = hparams_dict

    model6 = TestModel6()
    model6.trainer = trainer1
    hparams_dict2 = {"batch_size": 2}

    class TestModel7(Module):  # datamodule, hparams with the attribute: the datamodule's
        hparams = hparams_dict2

    model7 = TestModel7()
    model7.trainer = trainer1

    class TestDataModule8(DataModule):  # test for hparams dict
        hparams = hparams_dict2

    model8 = TestModel1()
    trainer2 = Trainer(logger=False, enable_progress_bar=False)
    model8.trainer = trainer2
    trainer2.datamodule = TestDataModule8()
    return (model1, model2, model3, model4, model5, model6, model7, model8), (trainer1, trainer2)


def test_lightning_hasattr() -> None:
    models, _ = model_and_trainer_cases()
    model1, model2, model3, model4, model5, model6, model7, model8 = models
    assert lightning_hasattr(model1, "learning_rate")
    assert lightning_hasattr(model2, "learning_rate")
    assert lightning_hasattr(model3, "learning_rate")
    assert not lightning_hasattr(model4, "learning_rate")
    assert lightning_hasattr(model5, "batch_size")
    assert lightning_hasattr(model6, "batch_size")
    assert lightning_hasattr(model7, "batch_size")
    assert lightning_hasattr(model8, "batch_size")
    for m in models:
        assert not lightning_hasattr(m, "this_attr_not_exist")


def test_lightning_getattr() -> None:
    models, _ = model_and_trainer_cases()
    *__, model5, model6, model7, model8 = models
    for i, m in enumerate(models[:3]):
        assert lightning_getattr(m, "learning_rate") == i
    assert lightning_getattr(model5, "batch_size") == 8
    assert lightning_getattr(model6, "batch_size") == 8
    assert lightning_getattr(model7, "batch_size") == 8
    assert lightning_getattr(model8, "batch_size") == 2
    for m in models:
        with pytest.raises(AttributeError, match=r"is neither stored in the model namespace nor "
                           r"the `hparams` namespace/dict, nor the datamodule\."):
            lightning_getattr(m, "this_attr_not_exist")


def test_lightning_setattr() -> None:
    models, _ = model_and_trainer_cases()
    *__, model5, model6, model7, model8 = models
    for m in models[:3]:
        lightning_setattr(m, "learning_rate", 10)
        assert lightning_getattr(m, "learning_rate") == 10
    for m in (model5, model6, model7):
        lightning_setattr(m, "batch_size", 128)
    for m in (model5, model6, model7, model8):
        assert lightning_getattr(m, "batch_size") == 128
    for m in models:
        with pytest.raises(AttributeError, match="is neither stored in the model namespace"):
            lightning_setattr(m, "this_attr_not_exist", None)


def test_is_picklable() -> None:
    class UnpicklableClass:  # only classes defined at the top level of a module are picklable
        pass

    for case in (None, True, 123, "str", (123, "str"), max):
        assert is_picklable(case) is True
    for case in (unpicklable_function, UnpicklableClass, ScriptModule(), threading.Lock()):
        assert is_picklable(case) is False


def test_clean_namespace() -> None:
    class UnpicklableClass:
        pass

    test_case = {"1": None, "2": True, "3": 123, "4": unpicklable_function,
                 "5": UnpicklableClass}
    with pytest.warns(UserWarning, match="removed from hparams because it cannot be pickled"):
        clean_namespace(test_case)
    assert test_case == {"1": None, "2": True, "3": 123}


def test_parse_class_init_keys() -> None:
    class Class:
        def __init__(self, hparams: Any, *my_args: Any, anykw: int = 42, **my_kwargs: Any) -> None:
            pass

    assert parse_class_init_keys(Class) == ("self", "my_args", "my_kwargs")


def test_get_init_args() -> None:
    class AutomaticArgsModel:
        def __init__(self, anyarg: Any, anykw: int = 42, **kwargs: Any) -> None:
            super().__init__()
            self.get_init_args_wrapper()

        def get_init_args_wrapper(self) -> None:
            frame = inspect.currentframe()
            assert frame is not None and frame.f_back is not None
            self.result = get_init_args(frame.f_back)

    my_class = AutomaticArgsModel("test", anykw=32, otherkw=123)
    assert my_class.result == {"anyarg": "test", "anykw": 32, "otherkw": 123}
    my_class.get_init_args_wrapper()
    assert my_class.result == {}


def test_collect_init_args() -> None:
    class AutomaticArgsParent:
        def __init__(self, anyarg: Any, anykw: int = 42, **kwargs: Any) -> None:
            super().__init__()
            self.get_init_args_wrapper()

        def get_init_args_wrapper(self) -> None:
            frame = inspect.currentframe()
            assert frame is not None
            self.result = collect_init_args(frame, [])

    class AutomaticArgsChild(AutomaticArgsParent):
        def __init__(self, anyarg: Any, childarg: Any, anykw: int = 42, childkw: int = 42,
                     **kwargs: Any) -> None:
            super().__init__(anyarg, anykw=anykw, **kwargs)

    my_class = AutomaticArgsChild("test1", "test2", anykw=32, childkw=22, otherkw=123)
    assert my_class.result[0] == {"anyarg": "test1", "anykw": 32, "otherkw": 123}
    assert my_class.result[1] == {"anyarg": "test1", "childarg": "test2", "anykw": 32,
                                  "childkw": 22, "otherkw": 123}


def test_hyperparameters_mixin() -> None:
    """Lightning's ``HyperparametersMixin`` doctests, and ``isinstance`` of fulmen's modules."""

    class ManuallyArgsModel(HyperparametersMixin):
        def __init__(self, arg1: Any, arg2: Any, arg3: Any) -> None:
            super().__init__()
            self.save_hyperparameters("arg1", "arg3")

    assert dict(ManuallyArgsModel(1, "abc", 3.14).hparams) == {"arg1": 1, "arg3": 3.14}

    class AutomaticArgsModel(HyperparametersMixin):
        def __init__(self, arg1: Any, arg2: Any, arg3: Any) -> None:
            super().__init__()
            self.save_hyperparameters(ignore="arg2")

    model = AutomaticArgsModel(1, "abc", 3.14)
    assert dict(model.hparams) == {"arg1": 1, "arg3": 3.14}
    assert dict(model.hparams_initial) == {"arg1": 1, "arg3": 3.14}

    class SingleArgModel(HyperparametersMixin):
        def __init__(self, params: Namespace) -> None:
            super().__init__()
            self.save_hyperparameters(params)

    assert dict(SingleArgModel(Namespace(p1=1, p2="abc")).hparams) == {"p1": 1, "p2": "abc"}
    assert isinstance(Module(), HyperparametersMixin)
    assert isinstance(DataModule(), HyperparametersMixin)
    assert not isinstance(object(), HyperparametersMixin)
