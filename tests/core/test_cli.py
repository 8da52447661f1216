"""``fulmen plugins`` in its three forms, in-process and as real commands."""

import json
import re
import subprocess
import sys

import pytest

from fulmen.cli import main


def test_plugins_lists_every_plugin_and_name(fake_dists, capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "Plugins (entry-point group 'fulmen.plugins'):" in out
    assert re.search(r"single_device +fulmen-strategies 0\.1\.0", out)  # columns fit names
    assert "cuda  NVIDIA GPUs through CUDA" in out and "[also: gpu]" in out
    assert "16-mixed" in out and "16 (deprecated)" in out


def test_plugins_json_reports_status_distribution_and_reasons(fake_dists, monkeypatch, capsys):
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "mps")
    fake_dists.reload()
    assert main(["plugins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    mps = next(p for p in report["plugins"] if p["name"] == "mps")
    assert mps == {"name": "mps", "value": "fulmen_accelerators.mps", "distribution":
                   "fulmen-accelerators", "version": "0.1.0", "status": "disabled",
                   "reason": "disabled by FULMEN_DISABLE_PLUGINS", "provides": {}}
    cuda = next(n for n in report["names"]["accelerator"] if n["name"] == "cuda")
    assert cuda["aliases"] == ["gpu"] and cuda["plugin"] == "cuda"
    assert cuda["target"] == "fulmen_accelerators.cuda.accelerator:CUDAAccelerator"
    assert report["errors"] == []


def test_plugins_detect_shows_every_verdict(fake_hardware, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CLUSTER_WORLD", "1")
    assert main(["plugins", "--detect"]) == 0
    out = capsys.readouterr().out
    assert "Detection on this machine" in out
    env_block = out.split("  environment:")[1].split("  accelerator:")[0]
    assert "fake_hardware    'fakecluster'  <- chosen (first answer)" in env_block
    assert "local            'local'" in env_block
    assert "cpu              'cpu'  <- chosen" in out
    assert "environment='fakecluster', accelerator='cpu', devices=[0], " \
           "strategy='single_device', precision='32-true'" in out


def test_plugins_shows_conflicts_and_fails(fake_dists, capsys):
    for dist, ep in (("fulmen-x", "xx"), ("fulmen-y", "yy")):
        module = fake_dists.unique(ep)
        fake_dists.add(dist, {ep: module}, {module: """
            from fulmen import EnvironmentSpec, hookimpl

            @hookimpl
            def fulmen_environments():
                yield EnvironmentSpec(name="local", target="a.b:C")
            """})
    fake_dists.reload()
    assert main(["plugins"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("error: conflicting plugin names:")
    assert "environment name 'local' is registered twice" in out
    assert "xx " in out and "yy " in out  # the plugins are still listed


@pytest.mark.timeout(60)
def test_python_dash_m_fulmen_and_the_console_script_run():
    for cmd in ([sys.executable, "-m", "fulmen", "plugins", "--json"],
                [sys.executable.replace("python", "fulmen"), "plugins", "--json"]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
        assert {p["name"] for p in json.loads(done.stdout)["plugins"]} >= {"cpu", "local"}


def test_unknown_command_exits_with_usage(capsys):
    assert main(["plugin"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'plugin'" in err and "did you mean 'plugins'?" in err
