"""Stop notices selected by name, through the plugin catalog: ``Trainer(plugins=["aws_spot"])``,
``Lite(plugins=[...])``, ``--trainer.plugins`` and YAML; ``fulmen plugins`` lists them without
importing them; an unknown, disabled or doubled name is an error that says what exists."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tiny_models import TinyModule

import fulmen
from fulmen import ConfigurationError
from fulmen.cli import FulmenCLI, main
from fulmen_environments.notices import AWSSpotNotice, AzureSpotNotice, GCPPreemptionNotice

QUIET = ["--trainer.logger=false", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]
NOTICES = {"aws_spot": AWSSpotNotice, "gcp_preemption": GCPPreemptionNotice,
           "azure_spot": AzureSpotNotice}


@pytest.mark.parametrize("name", sorted(NOTICES))
def test_a_notice_name_builds_its_plugin_for_the_trainer_and_lite(name):
    trainer = fulmen.Trainer(plugins=[name, "32-true"], logger=False)
    (notice,) = trainer.preemption_notices
    assert type(notice) is NOTICES[name] and notice.name == name
    lite = fulmen.Lite(accelerator="cpu", devices=1, plugins=name.upper())  # names are case-blind
    (notice,) = lite.preemption_notices
    assert type(notice) is NOTICES[name]


def test_names_and_instances_mix_and_a_name_twice_is_refused():
    trainer = fulmen.Trainer(plugins=["aws_spot", GCPPreemptionNotice()], logger=False)
    assert [n.name for n in trainer.preemption_notices] == ["aws_spot", "gcp_preemption"]
    with pytest.raises(ConfigurationError, match="names the stop notice 'aws_spot' twice"):
        fulmen.Trainer(plugins=[AWSSpotNotice(), "aws_spot"])


def test_an_unknown_name_lists_the_notices():
    with pytest.raises(ConfigurationError) as raised:
        fulmen.Lite(plugins=["aws_spott"])
    text = str(raised.value)
    assert "plugins=['aws_spott']: no active plugin registers an environment, a precision or a " \
           "stop notice named 'aws_spott'. Did you mean 'aws_spot'?" in text
    assert "stop notices: 'aws_spot', 'azure_spot', 'gcp_preemption'" in text
    assert "Environments: " in text and "precisions: " in text


def test_a_disabled_notice_plugin_says_so(fake_dists, monkeypatch):
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "gcp_preemption")
    fake_dists.reload()
    with pytest.raises(ConfigurationError, match=r"plugins='gcp_preemption': the notice is "
                       r"provided by plugin 'gcp_preemption' \(fulmen-environments .*\), which "
                       r"is disabled by FULMEN_DISABLE_PLUGINS"):
        fulmen.Trainer(plugins=["gcp_preemption"])


def test_a_third_party_notice_registers_by_name(fake_dists, tmp_path):
    module, target = fake_dists.unique("acme_notice"), fake_dists.unique("acme_notice_impl")
    fake_dists.add("fulmen-acme-notice", {"acme_spot": module}, {module: f'''
import fulmen

@fulmen.hookimpl
def fulmen_notices():
    yield fulmen.NoticeSpec(name="acme_spot", target="{target}:AcmeSpot",
                            init_kwargs={{"interval": 0.5}}, description="Acme's spot notice")
''', target: '''
from fulmen.api.notice import PreemptionNotice

class AcmeSpot(PreemptionNotice):
    window = 45.0

    def __init__(self, interval=1.0):
        self.interval = interval

    def start(self, announce):
        pass
'''})
    fake_dists.reload()
    assert "acme_spot" in fulmen.get_plugin_manager().catalog().names("notice")
    assert target not in sys.modules  # listing imported no notice code
    (notice,) = fulmen.Trainer(plugins=["acme_spot"], logger=False).preemption_notices
    assert notice.name == "acme_spot" and notice.interval == 0.5 and notice.window == 45.0


def test_fulmen_plugins_lists_notices(capsys):
    assert main(["plugins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    names = {n["name"]: n for n in report["names"]["notice"]}
    assert names["aws_spot"]["target"] == "fulmen_environments.notices:AWSSpotNotice"
    assert names["aws_spot"]["plugin"] == "aws_spot"
    assert {"aws_spot", "gcp_preemption", "azure_spot"} <= set(names)
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "\nNotices: " in out and "aws_spot" in out and "EC2 spot interruption" in out


def test_listing_notices_imports_no_notice_code():
    code = ("import sys, fulmen; catalog = fulmen.get_plugin_manager().catalog(); "
            "assert 'aws_spot' in catalog.names('notice'); "
            "assert 'fulmen_environments.notices' not in sys.modules, 'imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_cli_and_yaml_select_notices_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = FulmenCLI(TinyModule, run=False, args=["--trainer.plugins=[aws_spot]", *QUIET])
    assert [type(n) for n in cli.trainer.preemption_notices] == [AWSSpotNotice]
    config = tmp_path / "config.yaml"
    config.write_text("trainer:\n  plugins: [gcp_preemption, azure_spot]\n  logger: false\n")
    cli = FulmenCLI(TinyModule, run=False, args=["--config", str(config)])
    assert [n.name for n in cli.trainer.preemption_notices] == ["gcp_preemption", "azure_spot"]
