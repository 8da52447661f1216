"""Discovery, filtering and isolation, through real (fake) installed distributions."""

import json
import os
import sys
import warnings

import pytest

import fulmen
from fulmen import PluginError, PluginWarning

STRATEGY_PLUGIN = """
from fulmen import StrategySpec, hookimpl

@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="{name}", target="{module}_impl:Strategy", description="fake")
"""


def strategy_plugin(fake_dists, dist, ep, name):
    module = fake_dists.unique(ep)
    fake_dists.add(dist, {ep: module}, {module: STRATEGY_PLUGIN.format(name=name, module=module)})
    return module


def test_a_plugin_is_found_loaded_and_its_names_registered(fake_dists):
    module = strategy_plugin(fake_dists, "fulmen-fake", "fake_plugin", "fake_strategy")
    manager = fake_dists.reload()
    info = manager.plugins["fake_plugin"]
    assert (info.status, info.distribution, info.version) == ("active", "fulmen-fake", "1.0")
    entry = manager.catalog().select("strategy", "fake_strategy")
    assert entry.plugin is info
    assert info.provides == {"strategy": ["fake_strategy"]}
    assert f"{module}_impl" not in sys.modules  # the target is imported only when selected


def test_builtin_plugins_take_the_same_path(fake_dists):
    manager = fake_dists.reload()
    assert manager.plugins["cpu"].distribution == "fulmen-accelerators"
    assert manager.plugins["single_device"].distribution == "fulmen-strategies"
    assert manager.plugins["local"].value == "fulmen_environments.local"


def test_load_order_is_sorted_by_entry_point_name(fake_dists):
    for ep in ("zz_last", "aa_first", "mm_middle"):
        strategy_plugin(fake_dists, f"dist-{ep}", ep, ep)
    names = list(fake_dists.reload().plugins)
    assert names == sorted(names)


def test_import_error_is_isolated_with_a_warning_naming_plugin_distribution_and_cause(fake_dists):
    module = fake_dists.unique("broken")
    fake_dists.add("fulmen-broken", {"broken": module}, {module: "import not_a_real_module_x\n"},
                   version="2.3")
    strategy_plugin(fake_dists, "fulmen-fine", "fine", "fine_strategy")
    with pytest.warns(PluginWarning) as record:
        manager = fake_dists.reload()
    message = str(record[0].message)
    assert "plugin 'broken' (fulmen-broken 2.3) failed to import" in message
    assert "ModuleNotFoundError: No module named 'not_a_real_module_x'" in message
    assert manager.plugins["broken"].status == "failed"
    assert manager.catalog().find("strategy", "fine_strategy") is not None


def test_strict_mode_turns_an_import_error_into_plugin_error(fake_dists, monkeypatch):
    module = fake_dists.unique("broken")
    fake_dists.add("fulmen-broken", {"broken": module}, {module: "raise RuntimeError('boom')\n"})
    monkeypatch.setenv("FULMEN_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match=r"plugin 'broken' \(fulmen-broken 1.0\) failed to "
                       r"import .*RuntimeError: boom \(FULMEN_STRICT_PLUGINS=1\)"):
        fake_dists.reload()


def test_a_hook_that_raises_isolates_its_plugin(fake_dists):
    module = fake_dists.unique("raiser")
    fake_dists.add("fulmen-raiser", {"raiser": module}, {module: """
        from fulmen import hookimpl

        @hookimpl
        def fulmen_strategies():
            raise KeyError("oops")
            yield
        """})
    manager = fake_dists.reload()
    with pytest.warns(PluginWarning, match=r"plugin 'raiser' \(fulmen-raiser 1.0\) raised in "
                      r"fulmen_strategies: KeyError: 'oops'"):
        catalog = manager.catalog()
    assert manager.plugins["raiser"].status == "failed"
    assert catalog.find("strategy", "single_device") is not None


def test_an_invalid_record_fails_its_plugin_with_the_reason(fake_dists):
    module = fake_dists.unique("badrecord")
    fake_dists.add("fulmen-badrecord", {"badrecord": module}, {module: """
        from fulmen import StrategySpec, hookimpl

        @hookimpl
        def fulmen_strategies():
            yield StrategySpec(name="Bad Name", target="x:y")
        """})
    manager = fake_dists.reload()
    with pytest.warns(PluginWarning, match=r"plugin 'badrecord' .* raised in fulmen_strategies: "
                      r"PluginError: invalid StrategySpec\(name='Bad Name'\)"):
        manager.catalog()


def test_a_wrong_record_type_fails_its_plugin(fake_dists):
    module = fake_dists.unique("wrongtype")
    fake_dists.add("fulmen-wrongtype", {"wrongtype": module}, {module: """
        from fulmen import AcceleratorSpec, hookimpl

        @hookimpl
        def fulmen_strategies():
            return [AcceleratorSpec(name="oops", target="x:y")]
        """})
    with pytest.warns(PluginWarning, match=r"plugin 'wrongtype' \(fulmen-wrongtype 1.0\) yielded "
                      r"AcceleratorSpec\(.*name='oops'.* from fulmen_strategies, which expects "
                      "StrategySpec records"):
        fake_dists.reload().catalog()


def test_a_misspelt_hook_name_fails_the_plugin_with_a_suggestion(fake_dists):
    module = fake_dists.unique("typo")
    fake_dists.add("fulmen-typo", {"typo": module}, {module: """
        from fulmen import hookimpl

        @hookimpl
        def fulmen_strategy():
            return []
        """})
    with pytest.warns(PluginWarning, match=r"implements hooks fulmen does not define: "
                      r"'fulmen_strategy' Did you mean 'fulmen_strategies'\?"):
        manager = fake_dists.reload()
    assert manager.plugins["typo"].status == "failed"


def test_disabled_plugins_are_blocked_before_import(fake_dists, monkeypatch):
    module = fake_dists.unique("explosive")
    fake_dists.add("fulmen-explosive", {"explosive": module},
                   {module: "raise SystemExit('must never be imported')\n"})
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", " explosive , cuda")
    manager = fake_dists.reload()
    assert module not in sys.modules
    assert manager.plugins["explosive"].status == "disabled"
    assert manager.plugins["explosive"].reason == "disabled by FULMEN_DISABLE_PLUGINS"
    assert manager.catalog().find("accelerator", "gpu") is None


def test_unknown_names_in_the_disable_list_warn_with_the_valid_names(fake_dists, monkeypatch):
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "cdua")
    with pytest.warns(PluginWarning, match=r"FULMEN_DISABLE_PLUGINS names 'cdua', which is not "
                      r"an installed plugin. Did you mean 'cuda'\? Installed plugins: "
                      r"(.*, )?'cpu', "):
        fake_dists.reload()


def test_autoload_off_loads_only_the_named_plugins(fake_dists, monkeypatch):
    monkeypatch.setenv("FULMEN_PLUGIN_AUTOLOAD", "0")
    monkeypatch.setenv("FULMEN_PLUGINS", "cpu,local,fp32,single_device")
    manager = fake_dists.reload()
    active = sorted(n for n, i in manager.plugins.items() if i.status == "active")
    assert active == ["cpu", "fp32", "local", "single_device"]
    assert "FULMEN_PLUGIN_AUTOLOAD=0" in manager.plugins["cuda"].reason
    trainer = fulmen.Trainer()
    assert trainer.strategy.name == "single_device"


def test_clashing_registered_names_name_both_plugins_and_distributions(fake_dists):
    strategy_plugin(fake_dists, "fulmen-one", "one", "same_name")
    strategy_plugin(fake_dists, "fulmen-two", "two", "same_name")
    manager = fake_dists.reload()
    with pytest.raises(PluginError) as info:
        manager.catalog()
    text = str(info.value)
    assert "strategy name 'same_name' is registered twice" in text
    assert "plugin 'one' (fulmen-one 1.0)" in text and "plugin 'two' (fulmen-two 1.0)" in text


def test_a_plugin_cannot_take_a_builtin_name_silently(fake_dists):
    strategy_plugin(fake_dists, "fulmen-hijack", "hijack", "single_device")
    with pytest.raises(PluginError, match="'single_device' is registered twice"):
        fake_dists.reload().catalog()


def test_the_same_entry_point_name_from_two_distributions_is_an_error(fake_dists):
    strategy_plugin(fake_dists, "fulmen-a", "twin", "twin_a")
    strategy_plugin(fake_dists, "fulmen-b", "twin", "twin_b")
    with pytest.raises(PluginError, match=r"two distributions register the plugin name 'twin': "
                       r"fulmen-a 1.0 .* and fulmen-b 1.0"):
        fake_dists.reload().catalog()


def test_disabling_one_of_two_clashing_plugins_resolves_the_clash(fake_dists, monkeypatch):
    strategy_plugin(fake_dists, "fulmen-one", "one", "same_name")
    strategy_plugin(fake_dists, "fulmen-two", "two", "same_name")
    with pytest.raises(PluginError) as clash:
        fake_dists.reload().catalog()
    assert "Disabling one of them resolves this: " in str(clash.value)
    assert "FULMEN_DISABLE_PLUGINS=two keeps 'one'" in str(clash.value)
    assert "FULMEN_DISABLE_PLUGINS=one keeps 'two'" in str(clash.value)
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "two")
    manager = fake_dists.reload()
    assert manager.catalog().select("strategy", "same_name").plugin.name == "one"
    assert (manager.plugins["one"].status, manager.plugins["two"].status) == ("active", "disabled")


def test_the_way_out_of_an_entry_point_name_clash_is_disabling_one(fake_dists, monkeypatch):
    strategy_plugin(fake_dists, "fulmen-a", "twin", "twin_a")
    strategy_plugin(fake_dists, "fulmen-b", "twin", "twin_b")
    with pytest.raises(PluginError, match=r"or disable one with "
                       r"FULMEN_DISABLE_PLUGINS=fulmen-b:twin \(or fulmen-a:twin\)"):
        fake_dists.reload().catalog()
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "fulmen_B:twin")  # pip's spelling rules
    manager = fake_dists.reload()
    catalog = manager.catalog()
    assert catalog.select("strategy", "twin_a").plugin.distribution == "fulmen-a"
    assert catalog.find("strategy", "twin_b") is None
    assert manager.plugins["twin"].distribution == "fulmen-a"
    assert manager.plugins["fulmen-b:twin"].status == "disabled"


def test_fulmen_plugins_lists_both_twins_and_which_is_disabled(fake_dists, monkeypatch, capsys):
    import json

    from fulmen.cli import main

    strategy_plugin(fake_dists, "fulmen-a", "twin", "twin_a")
    strategy_plugin(fake_dists, "fulmen-b", "twin", "twin_b")
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "fulmen-a:twin")
    fake_dists.reload()
    assert main(["plugins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {r["distribution"]: r["status"] for r in report["plugins"] if r["name"] == "twin"}
    assert rows == {"fulmen-a": "disabled", "fulmen-b": "active"}
    assert [e["name"] for e in report["names"]["strategy"] if e["plugin"] == "twin"] == ["twin_b"]


def test_the_plain_entry_point_name_disables_both_twins(fake_dists, monkeypatch):
    strategy_plugin(fake_dists, "fulmen-a", "twin", "twin_a")
    strategy_plugin(fake_dists, "fulmen-b", "twin", "twin_b")
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "twin")
    manager = fake_dists.reload()
    assert manager.catalog().find("strategy", "twin_a") is None
    assert {i.status for i in manager.plugins.values() if i.name == "twin"} == {"disabled"}


def test_a_qualified_name_that_matches_nothing_warns(fake_dists, monkeypatch):
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "fulmen-nope:cpu")
    with pytest.warns(PluginWarning, match=r"FULMEN_DISABLE_PLUGINS names 'fulmen-nope:cpu', "
                      r"which is not an installed plugin"):
        manager = fake_dists.reload()
    assert manager.plugins["cpu"].status == "active"


ENVIRONMENT_PLUGIN = """
from fulmen import EnvironmentSpec, hookimpl

@hookimpl
def fulmen_environments():
    yield EnvironmentSpec(name="acme", target="fulmen_environments:LocalEnvironment")
"""


@pytest.mark.parametrize("entry_point", ["acme", "acme_cluster"])
def test_plugins_naming_a_disabled_environment_says_it_is_disabled(fake_dists, monkeypatch,
                                                                   entry_point):
    module = fake_dists.unique("acme")
    fake_dists.add("fulmen-acme", {entry_point: module}, {module: ENVIRONMENT_PLUGIN})
    fake_dists.reload()
    assert fulmen.Trainer(plugins=["acme"]).cluster_environment.name == "acme"
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", entry_point)
    fake_dists.reload()
    with pytest.raises(fulmen.ConfigurationError) as info:
        fulmen.Trainer(plugins=["acme"])
    text = str(info.value)
    assert f"plugin {entry_point!r} (fulmen-acme 1.0)" in text and "disabled" in text
    assert f"remove {entry_point!r} from FULMEN_DISABLE_PLUGINS" in text
    assert "does not know" not in text


def test_discovery_is_cached_and_redone_in_a_forked_child(fake_dists):
    manager = fake_dists.reload()
    assert fulmen.get_plugin_manager() is manager
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: a fresh manager for this process
        try:
            child = fulmen.get_plugin_manager()
            os.write(write, b"new" if child is not manager and "cpu" in child.plugins else b"old")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 3) == b"new"


def test_runtime_registration_joins_the_catalog(fake_dists):
    manager = fake_dists.reload()

    class Plugin:
        @fulmen.hookimpl
        def fulmen_environments(self):
            yield fulmen.EnvironmentSpec(name="runtime_env", target="x.y:Env")

    info = manager.register(Plugin(), "runtime")
    assert info.origin == "registered at runtime"
    assert manager.catalog().select("environment", "runtime_env").plugin is info
    with pytest.raises(PluginError, match="a plugin named 'runtime' is already known"):
        manager.register(Plugin(), "runtime")


# --------------------------------------------------------------------------- pluggy calls hooks


def plugin(fake_dists, ep, source, dist=None):
    module = fake_dists.unique(ep)
    fake_dists.add(dist or f"fulmen-{ep}", {ep: module}, {module: source})
    return module


def test_a_hook_wrapper_sees_and_changes_the_result(fake_dists):
    """New-style (wrapper=True) and old-style (hookwrapper=True) wrappers run, as pluggy
    documents them."""
    plugin(fake_dists, "wrapping", """
        from fulmen import hookimpl

        seen = []

        @hookimpl(wrapper=True)
        def fulmen_default_strategy(num_devices):
            result = yield
            seen.append(result)
            return "my_choice" if num_devices == 7 else result

        @hookimpl(hookwrapper=True)
        def fulmen_detect_accelerator():
            outcome = yield
            seen.append(("detect", outcome.get_result()))
        """)
    manager = fake_dists.reload()
    module = sys.modules[manager.plugins["wrapping"].value]
    kwargs = {"accelerator": "cpu", "num_nodes": 1, "interactive": False,
              "distributed_backend": "gloo"}
    assert manager.first_result("fulmen_default_strategy", num_devices=7, **kwargs)[0] == \
        "my_choice"
    assert manager.first_result("fulmen_default_strategy", num_devices=1, **kwargs) == (
        "single_device", "single_device")
    assert manager.first_result("fulmen_detect_accelerator")[0] == "cpu"
    assert module.seen == ["ddp", "single_device", ("detect", "cpu")]  # 7 devices: ddp


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_hook_wrapper_that_raises_is_reported_and_the_others_keep_working(fake_dists, where):
    plugin(fake_dists, "badwrap", f"""
        from fulmen import hookimpl

        @hookimpl(wrapper=True)
        def fulmen_strategies():
            if {where == "before"!r}:
                raise ValueError("wrapper broke before")
            result = yield
            raise ValueError("wrapper broke after")
        """)
    manager = fake_dists.reload()
    with pytest.warns(PluginWarning, match=rf"plugin 'badwrap' \(fulmen-badwrap 1.0\) raised in "
                      rf"its fulmen_strategies hook wrapper: ValueError: wrapper broke {where}"):
        catalog = manager.catalog()
    assert manager.plugins["badwrap"].status == "failed"
    assert catalog.find("strategy", "ddp") is not None


def test_a_plugin_calling_sys_exit_while_imported_is_isolated(fake_dists, monkeypatch):
    plugin(fake_dists, "exiter", "import sys\nsys.exit(3)\n")
    strategy_plugin(fake_dists, "fulmen-fine", "fine", "fine_strategy")
    with pytest.warns(PluginWarning, match=r"plugin 'exiter' \(fulmen-exiter 1.0\) called "
                      r"sys.exit\(3\) while 'exiter_\d+' was imported; it is left out"):
        manager = fake_dists.reload()
    assert manager.plugins["exiter"].status == "failed"
    assert manager.catalog().find("strategy", "fine_strategy") is not None
    monkeypatch.setenv("FULMEN_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match=r"plugin 'exiter' \(fulmen-exiter 1.0\) called "
                       r"sys.exit\(3\)"):
        fake_dists.reload()


def test_a_hook_calling_sys_exit_is_isolated(fake_dists):
    plugin(fake_dists, "hookexit", """
        import sys
        from fulmen import hookimpl

        @hookimpl
        def fulmen_detect_accelerator():
            sys.exit("no")
        """)
    manager = fake_dists.reload()
    with pytest.warns(PluginWarning, match=r"plugin 'hookexit' .* raised in "
                      r"fulmen_detect_accelerator: SystemExit: no"):
        assert manager.first_result("fulmen_detect_accelerator") == ("cpu", "cpu")


def test_trace_hooks_logs_pluggys_trace(fake_dists, monkeypatch, caplog):
    monkeypatch.setenv("FULMEN_TRACE_HOOKS", "1")
    with caplog.at_level("DEBUG", logger="fulmen.hooks"):
        fake_dists.reload().first_result("fulmen_detect_accelerator")
    lines = [r.getMessage() for r in caplog.records if r.name == "fulmen.hooks"]
    assert any("fulmen_detect_accelerator" in line for line in lines), lines
    assert any("finish fulmen_detect_accelerator --> cpu" in line for line in lines), lines


def test_trace_hooks_writes_to_stderr_without_a_handler(tmp_path):
    import subprocess

    code = "import fulmen; fulmen.get_plugin_manager().first_result('fulmen_detect_accelerator')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "FULMEN_TRACE_HOOKS": "1"})
    assert done.returncode == 0, done.stderr
    assert "finish fulmen_detect_accelerator --> cpu" in done.stderr


# ------------------------------------------------- a name a failed or disabled plugin provides

ACME_HOOKS = """
from fulmen import StrategySpec, hookimpl

@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="ddp_acme", target="fulmen_strategies:DDPStrategy")
"""

CAUSES = {
    "import raises": ("raise ImportError('acme needs libacme')  # the hook module\n",
                      "failed: failed to import '{module}': ImportError: acme needs libacme"),
    "hook yields junk": (ACME_HOOKS + "    yield 42\n",
                         "failed, so its records are left out: yielded 42 from "
                         "fulmen_strategies, which expects StrategySpec records"),
    "disabled": (ACME_HOOKS, "is disabled by FULMEN_DISABLE_PLUGINS"),
    "autoload off": (ACME_HOOKS, "is not loaded: not named in FULMEN_PLUGINS while "
                                 "FULMEN_PLUGIN_AUTOLOAD=0"),
}
WAY_OUT = {
    "import raises": "fix or reinstall fulmen-acme (pip install --force-reinstall fulmen-acme)"
                     "; `fulmen plugins --check acme` shows where it fails",
    "hook yields junk": "fix or reinstall fulmen-acme",
    "disabled": "remove 'acme' from FULMEN_DISABLE_PLUGINS",
    "autoload off": "add 'acme' to FULMEN_PLUGINS (or unset FULMEN_PLUGIN_AUTOLOAD=0)",
}


def acme(fake_dists, monkeypatch, cause):
    module = fake_dists.unique("acme")
    fake_dists.add("fulmen-acme", {"acme": module}, {module: CAUSES[cause][0]})
    if cause == "disabled":
        monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "acme")
    if cause == "autoload off":
        monkeypatch.setenv("FULMEN_PLUGIN_AUTOLOAD", "0")
        monkeypatch.setenv("FULMEN_PLUGINS", "cpu,local,fp32,single_device,csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # the failure was warned about once
        fake_dists.reload().catalog()
    return CAUSES[cause][1].format(module=module)


@pytest.mark.parametrize("cause", list(CAUSES))
def test_naming_a_record_of_a_failed_or_disabled_plugin_names_it_and_the_cause(
        fake_dists, monkeypatch, cause):
    why = acme(fake_dists, monkeypatch, cause)
    with pytest.raises(fulmen.FulmenError) as caught:
        fulmen.Trainer(strategy="ddp_acme", logger=False)
    text = str(caught.value)
    assert text.startswith("strategy='ddp_acme'"), text
    assert "plugin 'acme' (fulmen-acme 1.0)" in text and why in text, text
    assert WAY_OUT[cause] in text, text
    assert isinstance(caught.value, fulmen.ConfigurationError if cause in (
        "disabled", "autoload off") else PluginError)


@pytest.mark.parametrize("cause", ["import raises", "disabled"])
def test_any_unknown_name_lists_the_plugins_that_are_not_loaded(fake_dists, monkeypatch, cause):
    """A name that relates to no plugin still lists every plugin that failed or is disabled:
    its names are unknown, so it might be the one."""
    why = acme(fake_dists, monkeypatch, cause)
    for attempt in (lambda: fulmen.Trainer(strategy="zzz_unrelated", logger=False),
                    lambda: fulmen.Trainer(plugins=["zzz_unrelated"], logger=False)):
        with pytest.raises(fulmen.ConfigurationError) as caught:
            attempt()
        text = str(caught.value)
        assert "zzz_unrelated" in text and "one of them might provide it" in text, text
        assert f"plugin 'acme' (fulmen-acme 1.0) {why.removeprefix('failed, so ')}" in text
        assert WAY_OUT[cause] in text


def test_plugins_lists_a_plugin_whose_target_module_is_missing_as_broken(fake_dists, capsys):
    """Found without importing plugin code: the parent package of the target (whose import
    would raise) stays unimported."""
    package = fake_dists.unique("acme_typo")
    fake_dists.add("acme-typo", {"acme_typo": f"{package}.hooks"}, {
        f"{package}.hooks": f"""
            from fulmen import StrategySpec, hookimpl

            @hookimpl
            def fulmen_strategies():
                yield StrategySpec(name="typo_ddp",
                                   target="{package}.impl.strategi:TypoStrategy")
            """,
        f"{package}.impl.strategy": "class TypoStrategy: ...\n"})
    (fake_dists.root / package / "impl" / "__init__.py").write_text(
        "raise RuntimeError('importing the package runs its code')\n")
    fake_dists.reload()
    from fulmen.cli import main

    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("acme_typo "))
    assert (f"BROKEN: strategy 'typo_ddp': its target '{package}.impl.strategi:TypoStrategy' "
            f"cannot be imported: the target does not exist: acme-typo has no module "
            f"'{package}.impl.strategi' (did you mean '{package}.impl.strategy'?)") in row
    assert f"{package}.impl" not in sys.modules
    assert main(["plugins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    listed = next(n for n in report["names"]["strategy"] if n["name"] == "typo_ddp")
    assert listed["plugin"] == "acme_typo" and "acme-typo has no module" in listed["broken"]


def test_a_module_of_the_plugin_itself_that_is_missing_is_the_plugin_s_fault(fake_dists):
    """The target's module imports a module its own distribution should have (by the files it
    recorded): a PluginError that says so, not a missing library to install."""
    package = fake_dists.unique("acme_half")
    fake_dists.add("acme-half", {"acme_half": f"{package}.hooks"}, {
        f"{package}.hooks": f"""
            from fulmen import StrategySpec, hookimpl

            @hookimpl
            def fulmen_strategies():
                yield StrategySpec(name="half_ddp", target="{package}.strategy:Half")
            """,
        f"{package}.strategy": f"from {package}.helpers import thing  # not shipped\n"})
    fake_dists.reload()
    with pytest.raises(PluginError) as caught:
        fulmen.Trainer(strategy="half_ddp", logger=False)
    text = str(caught.value)
    assert (f"the target's module '{package}.strategy' imports '{package}.helpers', which "
            "acme-half does not have") in text
    assert f"{fake_dists.root / package / 'strategy.py'}:1" in text
    assert "The plugin is broken: upgrade or reinstall acme-half" in text


def test_a_target_in_a_library_the_distribution_requires_is_a_missing_library(fake_dists,
                                                                              capsys):
    """The target's module is not the plugin's own but a library its distribution requires
    (an extra): the library is missing here, the plugin is not broken."""
    module = fake_dists.unique("acme_extra")
    library = fake_dists.unique("acme_gpu_kernels")
    fake_dists.add("fulmen-acme", {"acme": module}, {module: f"""
        from fulmen import StrategySpec, hookimpl

        @hookimpl
        def fulmen_strategies():
            yield StrategySpec(name="acme_gpu", target="{library}.strategy:GpuStrategy")
        """})
    meta = fake_dists.root / "fulmen_acme-1.0.dist-info" / "METADATA"
    meta.write_text(meta.read_text() + f'Requires-Dist: {library.replace("_", "-")}>=1; '
                    'extra == "gpu"\n')
    fake_dists.reload()
    with pytest.raises(PluginError) as caught:
        fulmen.Trainer(strategy="acme_gpu", logger=False)
    text = str(caught.value)
    assert f"the target's module is in {library!r}, a library fulmen-acme requires that is " \
        "not installed here" in text
    assert "pip install 'fulmen-acme[gpu]'" in text
    from fulmen.cli import main

    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "BROKEN" not in out
    assert f"needs {library} (not installed)" in out
