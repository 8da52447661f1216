"""Composition rules: auto through hooks, names, instances, facts, and errors collected together."""

import re
import subprocess
import textwrap

import pytest

import fulmen
from fulmen import ConfigurationError, FulmenDeprecationWarning, PluginError
from fulmen.kernel.compose import compose


def test_everything_auto_on_this_machine(fake_dists):
    trainer = fulmen.Trainer()
    assert (trainer.accelerator.name, trainer.strategy.name, trainer.precision,
            trainer.cluster_environment.name) == ("cpu", "single_device", "32-true", "local")
    assert (trainer.num_devices, trainer.device_ids, trainer.num_nodes) == (1, [0], 1)
    assert (trainer.world_size, trainer.global_rank, trainer.local_rank, trainer.node_rank) == (
        1, 0, 0, 0)
    assert trainer.is_global_zero
    assert trainer.precision_plugin.name == "32-true"
    assert str(trainer.strategy.root_device) == "cpu"
    assert trainer.launcher is None


def test_auto_accelerator_and_strategy_come_from_the_first_result_hooks(fake_hardware,
                                                                         monkeypatch):
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    monkeypatch.setenv("FAKE_GPU_DETECT", "1")
    selection = compose(interactive=False)
    assert selection.accelerator.name == "fakegpu"
    assert selection.device_ids == (0, 1)
    assert selection.strategy.name == "fake_ddp"
    assert isinstance(selection.launcher, fake_hardware.FakeLauncher)
    assert selection.launcher.strategy is selection.strategy
    assert selection.strategy.world_size == 2


def test_auto_strategy_follows_the_interactive_flag(fake_hardware):
    selection = compose(devices=2, interactive=True)
    assert selection.strategy.name == "fake_notebook"
    assert selection.strategy.flavour == "notebook"  # init_kwargs of the record


def test_an_explicit_strategy_is_never_swapped(fake_hardware):
    with pytest.raises(ConfigurationError, match=r"strategy 'fake_ddp' cannot start its processes "
                       r"from a notebook or REPL. Strategies that can: 'fake_notebook', "
                       r"'single_device'"):
        compose(strategy="fake_ddp", devices=2, interactive=True)


def test_aliases_select_the_canonical_record(fake_dists):
    assert compose(accelerator="CPU").accelerator.name == "cpu"
    with pytest.warns(FulmenDeprecationWarning, match=r"precision='bf16' is a legacy spelling; "
                      r"use precision='bf16-mixed'"):
        assert fulmen.Trainer(precision="bf16").precision == "bf16-mixed"
    for legacy, canonical in ((16, "16-mixed"), (32, "32-true"), ("64", "64-true")):
        with pytest.warns(FulmenDeprecationWarning, match=f"use precision='{canonical}'"):
            assert fulmen.Trainer(precision=legacy).precision == canonical


def test_unknown_names_echo_suggest_and_list(fake_hardware):
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(strategy="fake_dpd")
    assert str(info.value).startswith(
        "strategy='fake_dpd' is not a registered strategy name. Did you mean 'fake_ddp'? "
        "Available strategies: 'fake_ddp', 'fake_notebook', 'single_device'.")
    with pytest.raises(ConfigurationError, match=r"accelerator='cpux' is not a registered "
                       r"accelerator name. Did you mean 'cpu'\? Available accelerators: 'cpu', "
                       r"'cuda', 'fakegpu', 'mps'"):
        fulmen.Trainer(accelerator="cpux")
    with pytest.raises(ConfigurationError, match=r"precision='bf17' .* Did you mean 'bf16-mixed'"):
        fulmen.Trainer(precision="bf17")


def test_all_problems_are_reported_together(fake_dists):
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(accelerator="cpux", strategy="dpp", precision="bf17", num_nodes=0)
    text = str(info.value)
    assert text.startswith("this selection cannot work:\n  - ")
    for part in ("num_nodes=0 must be a positive int", "accelerator='cpux'", "strategy='dpp'",
                 "precision='bf17'"):
        assert part in text


def test_record_facts_are_checked_and_alternatives_named(fake_hardware, monkeypatch):
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    with pytest.raises(ConfigurationError) as info:
        compose(accelerator="fakegpu", devices=2, strategy="single_device", num_nodes=2,
                interactive=False)
    text = str(info.value)
    assert ("strategy 'single_device' drives at most 1 device(s) per node, but 2 were selected. "
            "Strategies for several devices: 'fake_ddp', 'fake_notebook'.") in text
    assert ("strategy 'single_device' runs on one node, but num_nodes=2. Multi-node strategies: "
            "'fake_ddp', 'fake_notebook'.") in text
    with pytest.raises(ConfigurationError, match=re.escape(
            "strategy 'fake_notebook' does not support precision '64-true'; it supports "
            "'16-mixed', '32-true', 'bf16-mixed'.")):
        compose(strategy="fake_notebook", devices=2, precision="64-true", interactive=False)


def test_strategy_accelerator_mismatch_names_strategies_that_run_there(fake_hardware, fake_dists):
    module = fake_dists.unique("gpuonly")
    fake_dists.add("fulmen-gpuonly", {"gpuonly": module}, {module: """
        from fulmen import StrategySpec, hookimpl

        @hookimpl
        def fulmen_strategies():
            yield StrategySpec(name="gpu_only", target="x.y:Z", accelerators=["cuda"])
        """})
    fake_dists.reload()
    with pytest.raises(ConfigurationError, match=re.escape(
            "strategy 'gpu_only' does not run on accelerator 'cpu' (it runs on 'cuda'). "
            "Strategies for 'cpu': 'fake_ddp', 'fake_notebook', 'single_device'.")):
        fulmen.Trainer(strategy="gpu_only")


def test_check_selection_hook_messages_are_raised(fake_dists):
    module = fake_dists.unique("picky")
    fake_dists.add("fulmen-picky", {"picky": module}, {module: """
        from fulmen import hookimpl

        @hookimpl
        def fulmen_check_selection(selection):
            if selection.precision.name == "64-true":
                yield "the picky plugin refuses 64-true here; use 32-true"
        """})
    fake_dists.reload()
    with pytest.raises(ConfigurationError, match="the picky plugin refuses 64-true here"):
        fulmen.Trainer(precision="64-true")
    assert fulmen.Trainer().precision == "32-true"


def test_plugins_take_instances_and_names(fake_hardware, monkeypatch):
    from fulmen_environments import LocalEnvironment
    from fulmen_precision import MixedPrecision

    env = LocalEnvironment()
    trainer = fulmen.Trainer(plugins=[env, MixedPrecision("bfloat16")])
    assert trainer.cluster_environment is env
    assert trainer.precision == "bf16-mixed"
    monkeypatch.setenv("FAKE_CLUSTER_WORLD", "1")
    assert fulmen.Trainer(plugins=["local"]).cluster_environment.name == "local"
    assert fulmen.Trainer(plugins="fakecluster").cluster_environment.name == "fakecluster"
    assert fulmen.Trainer(plugins=["bf16-mixed"]).precision == "bf16-mixed"


def test_a_user_environment_takes_precedence_over_detection(fake_hardware, monkeypatch):
    from fulmen_environments import LocalEnvironment

    class MyCluster(LocalEnvironment):
        pass

    monkeypatch.setenv("FAKE_CLUSTER_WORLD", "4")  # detection would pick fakecluster
    trainer = fulmen.Trainer(plugins=[MyCluster()])
    assert trainer.cluster_environment.name == "my_cluster"


def test_an_environment_that_creates_processes_skips_the_launcher(fake_hardware, monkeypatch):
    monkeypatch.setenv("FAKE_CLUSTER_WORLD", "4")
    monkeypatch.setenv("FAKE_CLUSTER_RANK", "3")
    trainer = fulmen.Trainer(devices=2, num_nodes=2, strategy="fake_ddp")
    assert trainer.cluster_environment.name == "fakecluster"
    assert trainer.launcher is None
    assert (trainer.world_size, trainer.global_rank, trainer.is_global_zero) == (4, 3, False)


def test_environment_validation_disagreement_is_reported(fake_hardware, monkeypatch):
    monkeypatch.setenv("FAKE_CLUSTER_WORLD", "4")
    with pytest.raises(ConfigurationError, match=r"the fake cluster started 4 processes, but "
                       r"devices=2 x num_nodes=1 = 2"):
        fulmen.Trainer(devices=2, strategy="fake_ddp")


def test_bad_plugins_entries(fake_hardware):
    with pytest.raises(ConfigurationError, match=r"plugins=\[...\] got <object object at .*> of "
                       r"type object, which fulmen does not know. It takes ClusterEnvironment, "
                       r"Precision, CheckpointIO and PreemptionNotice instances"):
        fulmen.Trainer(plugins=[object()])
    with pytest.raises(ConfigurationError, match=r"plugins=\[...\] holds two environments: "
                       r"'local' and 'fakecluster'; pass only one"):
        fulmen.Trainer(plugins=["local", "fakecluster"])
    with pytest.raises(ConfigurationError, match=r"plugins=\['slrum'\]: no active plugin "
                       r"registers an environment, a precision or a stop notice named 'slrum'. "
                       r"Did you mean 'slurm'\?"):
        fulmen.Trainer(plugins=["slrum"])


def test_precision_given_twice_is_an_error(fake_dists):
    from fulmen_precision import Precision64

    with pytest.raises(ConfigurationError, match=r"precision='bf16-mixed' and plugins=\[.*\] "
                       r"both set the precision; keep one"):
        fulmen.Trainer(precision="bf16-mixed", plugins=[Precision64()])


def test_instances_are_accepted_for_every_argument(fake_dists):
    from fulmen_accelerators import CPUAccelerator
    from fulmen_precision import Precision64
    from fulmen_strategies import SingleDeviceStrategy

    strategy = SingleDeviceStrategy()
    trainer = fulmen.Trainer(accelerator=CPUAccelerator(), strategy=strategy,
                             precision=Precision64())
    assert trainer.strategy is strategy
    assert trainer.precision == "64-true"
    assert trainer.strategy.accelerator is trainer.accelerator


def test_a_wrong_type_for_an_argument_names_the_type(fake_dists):
    with pytest.raises(ConfigurationError, match=r"strategy=3.5: expected a registered strategy "
                       r"name or a Strategy instance, got float. Registered strategies: "):
        fulmen.Trainer(strategy=3.5)


def test_disabled_plugin_names_say_so_and_by_what(fake_dists, monkeypatch):
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "mixed")
    fake_dists.reload()
    with pytest.raises(ConfigurationError, match=r"precision='bf16-mixed': the precision is "
                       r"provided by plugin 'mixed' \(fulmen-precision 0.1.0\), which is disabled "
                       r"by FULMEN_DISABLE_PLUGINS. To use it, remove 'mixed' from "
                       r"FULMEN_DISABLE_PLUGINS; or choose one of: "):
        fulmen.Trainer(precision="bf16-mixed")


def test_failed_plugin_names_say_it_failed_and_why(fake_dists):
    module = fake_dists.unique("brokenenv")
    fake_dists.add("fulmen-brokenenv", {"brokenenv": module}, {module: "1/0\n"})
    with pytest.warns(fulmen.PluginWarning):
        fake_dists.reload()
    with pytest.raises(PluginError, match=r"plugins='brokenenv': the environment is provided by "
                       r"plugin 'brokenenv' \(fulmen-brokenenv 1.0\), which failed: failed to "
                       r"import .*ZeroDivisionError"):
        compose(plugins=["brokenenv"])


def test_known_names_of_missing_distributions_say_what_to_install(python_without):
    """In an environment without fulmen-deepspeed (made here, whether or not it is installed)."""
    code = textwrap.dedent("""
        import fulmen
        try:
            fulmen.Trainer(strategy="deepspeed_stage_2")
        except fulmen.ConfigurationError as exc:
            print(exc)
        """)
    done = subprocess.run(python_without("fulmen-deepspeed"), input=code, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ("strategy='deepspeed_stage_2': no installed plugin registers this strategy; it comes "
            "with the 'fulmen-deepspeed' distribution (pip install 'fulmen[deepspeed]').") \
        in done.stdout


def test_a_target_that_fails_to_import_is_a_plugin_error(fake_dists):
    module = fake_dists.unique("lazybroken")
    fake_dists.add("fulmen-lazybroken", {"lazybroken": module}, {module: """
        from fulmen import StrategySpec, hookimpl

        @hookimpl
        def fulmen_strategies():
            yield StrategySpec(name="lazy_broken", target="nowhere_to_be_found.mod:Strategy")
        """})
    fake_dists.reload()
    with pytest.raises(PluginError, match=r"strategy='lazy_broken' is registered by plugin "
                       r"'lazybroken' \(fulmen-lazybroken 1.0\), but its target "
                       r"'nowhere_to_be_found.mod:Strategy' cannot be imported "
                       r"\(ModuleNotFoundError"):
        fulmen.Trainer(strategy="lazy_broken")


def test_lite_composes_the_same_way(fake_hardware):
    lite = fulmen.Lite(devices=2, strategy="fake_ddp")
    assert (lite.strategy.name, lite.world_size, lite.global_rank) == ("fake_ddp", 2, 0)
    assert str(lite.device) == "cpu"


def test_an_instance_of_a_registered_class_gets_the_matching_record(fake_dists):
    """An instance names itself after the registered name its arguments select (its public
    ``name``), its launcher comes from the strategy; a user's subclass keeps its own name."""
    from fulmen_strategies.ddp.strategy import DDPStrategy

    cases = [(DDPStrategy(), "ddp", "ScriptLauncher"),
             (DDPStrategy(start_method="spawn", find_unused_parameters=True),
              "ddp_spawn_find_unused_parameters_true", "MultiprocessingLauncher"),
             (DDPStrategy(start_method="fork"), "ddp_fork", "MultiprocessingLauncher")]
    for instance, name, launcher in cases:
        selection = compose(accelerator="cpu", devices=2, strategy=instance)
        assert selection.strategy is instance and instance.name == name
        assert type(selection.launcher).__name__ == launcher

    class TunedDDP(DDPStrategy):
        pass

    selection = compose(accelerator="cpu", devices=2, strategy=TunedDDP())
    assert selection.strategy.name == "tuned_ddp"
    assert type(selection.launcher).__name__ == "ScriptLauncher"


def test_a_registered_subclass_inherits_its_bases_launcher(fake_dists):
    """A third-party record for a DDPStrategy subclass that overrides nothing gets DDP's launcher
    from the strategy itself (the record names none)."""
    module = fake_dists.unique("acmeddp")
    fake_dists.add("fulmen-acmeddp", {"acmeddp": module}, {module: """
        from fulmen import StrategySpec, hookimpl
        from fulmen_strategies import DDPStrategy

        class AcmeDDP(DDPStrategy):
            pass

        @hookimpl
        def fulmen_strategies():
            yield StrategySpec(name="acme_ddp", target=AcmeDDP)
            yield StrategySpec(name="acme_ddp_spawn", target=AcmeDDP,
                               init_kwargs={"start_method": "spawn"})
        """})
    fake_dists.reload()
    for name, launcher in (("acme_ddp", "ScriptLauncher"),
                           ("acme_ddp_spawn", "MultiprocessingLauncher")):
        selection = compose(accelerator="cpu", devices=2, strategy=name)
        assert type(selection.launcher).__name__ == launcher
        assert selection.strategy.launcher is selection.launcher
        assert selection.launcher.strategy is selection.strategy


def _strategy_plugin(fake_dists, returns: str) -> None:
    module = fake_dists.unique("oddlaunch")
    source = ("from fulmen import StrategySpec, hookimpl\n"
              "from fulmen_strategies import DDPStrategy\n\n"
              "class Odd(DDPStrategy):\n"
              f"    def create_launcher(self):\n        return {returns}\n\n"
              "@hookimpl\n"
              "def fulmen_strategies():\n"
              "    yield StrategySpec(name='odd', target=Odd)\n")
    fake_dists.add("fulmen-oddlaunch", {"oddlaunch": module}, {module: source})
    fake_dists.reload()


def test_a_launcher_of_the_wrong_type_names_the_strategy_and_its_plugin(fake_dists):
    _strategy_plugin(fake_dists, "'script'")
    with pytest.raises(PluginError, match=r"strategy 'odd' \(.*Odd, from plugin 'oddlaunch' "
                       r"\(fulmen-oddlaunch 1.0\)\): create_launcher\(\) returned str; it must "
                       r"return a fulmen.Launcher or None"):
        compose(accelerator="cpu", devices=2, strategy="odd")


def test_several_processes_and_no_launcher_fails_at_construction(fake_dists):
    _strategy_plugin(fake_dists, "None")
    with pytest.raises(ConfigurationError, match=r"needs 2 processes \(2 per node x num_nodes=1"
                       r"\), but its create_launcher\(\) returned None and the 'local' cluster "
                       r"environment does not start processes either"):
        compose(accelerator="cpu", devices=2, strategy="odd")
    assert compose(accelerator="cpu", devices=1, strategy="odd").launcher is None


def test_hints_for_missing_names_are_data(tmp_path):
    """The kernel's hints come from known_plugins.json: no name or command is code."""
    from fulmen.kernel import known_plugins
    data = tmp_path / "known.json"
    data.write_text('[{"distribution": "fulmen-npu", "entry_point": "npu", "kind": "accelerator",'
                    ' "names": ["npu", "ascend"], "install": "pip install \'fulmen[npu]\'"},'
                    ' {"distribution": "fulmen-x", "entry_point": "x", "kind": "strategy",'
                    ' "names": ["x"]}]')
    known = known_plugins.load(data)
    assert known["accelerator"]["ascend"] == ("fulmen-npu", "npu", "pip install 'fulmen[npu]'")
    assert known["strategy"]["x"].install == "pip install fulmen-x"
    shipped = known_plugins.load()
    assert "make" not in known_plugins.DATA.with_suffix(".py").read_text()
    assert shipped["strategy"]["horovod"].install.startswith(
        "pip install 'fulmen[horovod]', then build Horovod for the installed torch with its "
        "fulmen-build-horovod command")


@pytest.mark.parametrize(("variables", "message"), [
    ({"RANK": "3", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, "RANK=3 but WORLD_SIZE=2"),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "2"}, "LOCAL_RANK=2 but WORLD_SIZE=2"),
])
def test_ranks_at_or_above_the_world_size_are_refused_before_anything_starts(
        monkeypatch, variables, message):
    """Used to hang: rank 3 of 2 waits forever for peers that do not exist."""
    for name, value in {**variables, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29555"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=message) as info:
        compose(accelerator="cpu", devices=2, strategy="ddp")
    assert "ranks count from 0" in str(info.value)
