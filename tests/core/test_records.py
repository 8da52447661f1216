import pytest

from fulmen import AcceleratorSpec, PluginError, PrecisionSpec, StrategySpec


def test_valid_record_normalises_lists_and_freezes_kwargs():
    spec = StrategySpec(name="ddp_x", target="pkg.mod:Cls", aliases=["ddpx"],
                        accelerators=["cpu"], init_kwargs={"a": 1})
    assert spec.aliases == ("ddpx",)
    assert spec.accelerators == ("cpu",)
    assert spec.names == ("ddp_x", "ddpx")
    with pytest.raises(TypeError):
        spec.init_kwargs["a"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "DDP"}, "name 'DDP' must be a lower-case string"),
        ({"name": "has space"}, "name 'has space'"),
        ({"name": ""}, "name ''"),
        ({"target": "no_colon"}, "target 'no_colon' must look like 'package.module:ClassName'"),
        ({"target": 42}, "target must be a 'package.module:Attr' string or a class"),
        ({"aliases": "gpu"}, "aliases must be a list or tuple"),
        ({"aliases": ["Bad Alias"]}, "aliases entry 'Bad Alias'"),
        ({"aliases": ["x"]}, "the name is also listed as an alias"),
        ({"init_kwargs": {"not an identifier": 1}}, "init_kwargs must map argument names"),
        ({"max_devices": 0}, "max_devices must be a positive int or None"),
    ],
)
def test_invalid_records_raise_plugin_error(kwargs, message):
    fields = {"name": "x", "target": "pkg.mod:Cls", **kwargs}
    with pytest.raises(PluginError, match="invalid StrategySpec") as info:
        StrategySpec(**fields)
    assert message in str(info.value)


def test_a_strategy_record_names_no_launcher():
    """The strategy chooses its launcher (Strategy.create_launcher), never its record."""
    with pytest.raises(TypeError, match="launcher"):
        StrategySpec(name="x", target="pkg.mod:Cls", launcher="pkg.mod:L")  # type: ignore[call-arg]


def test_target_may_be_the_class_itself():
    class Thing:
        pass

    spec = AcceleratorSpec(name="thing", target=Thing)
    assert spec.load() is Thing
    assert spec.target_path.endswith(":test_target_may_be_the_class_itself.<locals>.Thing")


def test_load_reports_a_missing_target_with_the_record_name():
    spec = PrecisionSpec(name="p", target="no_such_module_anywhere:Cls")
    with pytest.raises(PluginError, match=r"precision 'p': cannot import its target "
                       r"'no_such_module_anywhere:Cls': ModuleNotFoundError"):
        spec.load()


def test_create_passes_init_kwargs_and_sets_the_registered_name():
    class Thing:
        def __init__(self, flavour):
            self.flavour = flavour

    spec = StrategySpec(name="thing_sweet", target=Thing, init_kwargs={"flavour": "sweet"})
    made = spec.create()
    assert (made.flavour, made.name) == ("sweet", "thing_sweet")
