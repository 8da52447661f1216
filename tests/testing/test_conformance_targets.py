"""The kit tells apart three reasons a record's target cannot be imported (issue 43): the
plugin's own target does not exist (a misspelt module: a failure naming the target, the plugin
and its distribution), a third-party library the target imports is missing (a skip naming the
library and how to install it), and a target whose import raises (a failure at the plugin's
line). A name asked for that only a failed or disabled plugin could provide checks that plugin,
as naming the plugin does. Fake plugin distributions, real worker processes."""

from __future__ import annotations

import pytest

from fulmen.cli import main
from fulmen.testing import check, select_targets

pytestmark = pytest.mark.timeout(300)

HOOKS = '''
from fulmen import StrategySpec, hookimpl

PACKAGE = __name__.rpartition(".")[0]


@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="{name}", target=PACKAGE + ".{module}:{cls}", accelerators=["cpu"])
'''

STRATEGY = '''
from fulmen_strategies import DDPStrategy


class TypoStrategy(DDPStrategy):
    pass
'''

NEEDS_A_LIBRARY = '''
import acme_library_not_installed_anywhere  # IMPORTS

from fulmen_strategies import DDPStrategy


class DepStrategy(DDPStrategy):
    pass
'''

RAISES = '''
from fulmen_strategies import DDPStrategy

SETTINGS = {}
BACKEND = SETTINGS["backend"]  # RAISES


class RaisingStrategy(DDPStrategy):
    pass
'''


def add_plugin(fake_dists, stem: str, name: str, module: str, cls: str, source: str,
               requires: str = "") -> str:
    package = fake_dists.unique(stem)
    dist = stem.replace("_", "-")
    fake_dists.add(dist, {stem: f"{package}.hooks"}, {
        f"{package}.hooks": HOOKS.format(name=name, module=module, cls=cls),
        f"{package}.strategy": source})
    if requires:  # the distribution's own requirement names the library (its METADATA)
        meta = fake_dists.root / f"{dist.replace('-', '_')}-1.0.dist-info" / "METADATA"
        meta.write_text(meta.read_text() + f"Requires-Dist: {requires}\n")
    return package


@pytest.fixture
def plugins(fake_dists):
    typo = add_plugin(fake_dists, "acme_typo", "typo_ddp", "strategi", "TypoStrategy", STRATEGY)
    dep = add_plugin(fake_dists, "acme_dep", "dep_ddp", "strategy", "DepStrategy",
                     NEEDS_A_LIBRARY, requires="acme-library-not-installed-anywhere>=2.1")
    raising = add_plugin(fake_dists, "acme_raise", "raising_ddp", "strategy", "RaisingStrategy",
                         RAISES)
    fake_dists.reload()

    def line_of(package: str, marker: str) -> str:
        path = fake_dists.root / package / "strategy.py"
        lines = path.read_text().splitlines()
        return f"{path}:{next(i for i, t in enumerate(lines, 1) if f'# {marker}' in t)}"

    return {"typo": typo, "dep": dep, "raise": raising, "line_of": line_of}


def test_a_misspelt_target_fails_a_missing_library_skips_a_raising_import_fails(plugins):
    report = check(["typo_ddp", "dep_ddp", "raising_ddp"], timeout=120)
    typo = report.for_name("strategy", "typo_ddp")["plugin.loads"]
    assert typo.status == "fail", typo
    assert (typo.plugin, typo.distribution) == ("acme_typo", "acme-typo")
    assert f"its target '{plugins['typo']}.strategi:TypoStrategy' cannot be imported" in \
        typo.detail
    assert f"acme-typo has no module '{plugins['typo']}.strategi' (did you mean " \
        f"'{plugins['typo']}.strategy'?)" in typo.detail
    assert "plugin 'acme_typo' (acme-typo 1.0)" in typo.detail
    assert "correct the 'package.module:Class' string" in typo.hint

    dep = report.for_name("strategy", "dep_ddp")
    assert {r.status for r in dep.values()} == {"skip"}, dep
    reason = dep["plugin.loads"].detail
    assert "imports 'acme_library_not_installed_anywhere', a library that is not installed " \
        "here" in reason
    assert "install it with: pip install 'acme-library-not-installed-anywhere>=2.1'" in reason
    assert plugins["line_of"](plugins["dep"], "IMPORTS") in reason
    # the two-process clauses give the same reason, whole, not "not run"
    assert dep["strategy.processes"].detail == reason

    raising = report.for_name("strategy", "raising_ddp")["plugin.loads"]
    assert raising.status == "fail", raising
    assert "importing the target raised KeyError: 'backend'" in raising.detail
    assert raising.where == plugins["line_of"](plugins["raise"], "RAISES")
    assert {r.name for r in report.failures} == {"typo_ddp", "raising_ddp"}


def test_the_table_prints_a_long_skip_reason_whole(plugins, capsys):
    assert main(["plugins", "--check", "dep_ddp", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert "see note 1)" in out
    notes = " ".join(out.split("Notes:")[1].split())
    assert ("a library that is not installed here (at "
            f"{plugins['line_of'](plugins['dep'], 'IMPORTS')}); install it with: pip install "
            "'acme-library-not-installed-anywhere>=2.1'") in notes


FAILS = '''
raise ImportError("acme_gone needs libacme, which is not installed")  # RAISES
'''

YIELDS_JUNK = '''
from fulmen import StrategySpec, hookimpl


@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="ddp_junk", target="fulmen_strategies:DDPStrategy")
    yield 42
'''


def test_a_name_of_a_failed_plugin_checks_that_plugin_as_naming_it_does(fake_dists, capsys):
    gone, junk = fake_dists.unique("acme_gone"), fake_dists.unique("acme_junk")
    fake_dists.add("fulmen-acme", {"acme": gone}, {gone: FAILS})
    fake_dists.add("fulmen-junk", {"junk": junk}, {junk: YIELDS_JUNK})
    with pytest.warns(Warning):
        fake_dists.reload().catalog()
    by_name = select_targets(["ddp_acme"])
    assert [(t.kind, t.name, t.asked) for t in by_name] == [("plugin", "acme", "ddp_acme")]
    assert [(t.kind, t.name) for t in select_targets(["acme"])] == [("plugin", "acme")]
    # a record the failed plugin yielded before failing names it exactly
    assert [(t.name, t.asked) for t in select_targets(["ddp_junk"])] == [("junk", "ddp_junk")]

    assert main(["plugins", "--check", "ddp_acme", "--timeout", "120"]) == 1
    out = capsys.readouterr().out
    assert "- plugin 'acme' (plugin 'acme', fulmen-acme) breaks plugin.loads at " in out
    assert "ImportError: acme_gone needs libacme" in out
    assert "[checked for 'ddp_acme', which no active plugin registers" in out
    assert main(["plugins", "--check", "acme", "--timeout", "120"]) == 1
    assert "ImportError: acme_gone needs libacme" in capsys.readouterr().out


def test_an_unknown_name_lists_every_plugin_that_is_not_loaded(fake_dists, monkeypatch):
    gone, quiet = fake_dists.unique("acme_gone"), fake_dists.unique("quiet")
    fake_dists.add("fulmen-acme", {"acme": gone}, {gone: FAILS})
    fake_dists.add("fulmen-quiet", {"quiet": quiet}, {quiet: YIELDS_JUNK})
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "quiet")
    with pytest.warns(Warning):
        fake_dists.reload()
    with pytest.raises(Exception) as caught:
        select_targets(["zzz_nothing"])
    text = str(caught.value)
    assert "'zzz_nothing' is neither a registered name nor an installed plugin" in text
    assert "plugin 'acme' (fulmen-acme 1.0) failed: failed to import" in text
    assert "ImportError: acme_gone needs libacme" in text
    assert "plugin 'quiet' (fulmen-quiet 1.0) is disabled by FULMEN_DISABLE_PLUGINS; to use " \
        "it, remove 'quiet' from FULMEN_DISABLE_PLUGINS" in text
    assert "fulmen plugins --check PLUGIN" in text
    # a name that relates to the disabled plugin checks it, enabled for the check
    assert [(t.name, t.state, t.asked) for t in select_targets(["quiet_env"])] == [
        ("quiet", "disabled", "quiet_env")]
