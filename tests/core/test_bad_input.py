"""Bad input gets a fulmen error naming what was wrong and what to do (issue 33): never a bare
traceback from int(), jsonargparse, torch or an import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import fulmen
from fulmen import ConfigurationError, PluginError
from fulmen.callbacks import ModelCheckpoint

GHOST = """
from fulmen import StrategySpec, hookimpl

@hookimpl
def fulmen_strategies():
    yield StrategySpec(name="ghost", target="{module}_impl:GhostStrategy", description="fake")
"""


def test_a_target_that_cannot_be_imported_names_the_plugin_and_its_distribution(fake_dists):
    module = fake_dists.unique("ghost")
    fake_dists.add("fulmen-ghost", {"ghost_plugin": module},
                   {module: GHOST.format(module=module),
                    f"{module}_impl": "import ghost_dependency_that_is_not_installed\n"},
                   version="0.3")
    fake_dists.reload()
    with pytest.raises(PluginError) as caught:
        fulmen.Trainer(strategy="ghost", logger=False)
    text = str(caught.value)
    assert "strategy='ghost' is registered by plugin 'ghost_plugin' (fulmen-ghost 0.3)" in text
    assert "ModuleNotFoundError: No module named 'ghost_dependency_that_is_not_installed'" in text
    assert "pip install --force-reinstall fulmen-ghost" in text
    assert "FULMEN_DISABLE_PLUGINS=ghost_plugin" in text


@pytest.mark.parametrize("variable", ["LOCAL_RANK", "RANK"])
def test_a_rank_variable_that_is_not_a_number_is_named_not_a_bare_value_error(variable):
    code = ("import fulmen\n"
            "fulmen.Trainer  # importing must work\n"
            "try:\n"
            "    fulmen.Trainer(logger=False)\n"
            "except fulmen.ConfigurationError as error:\n"
            "    print('refused:', error)\n")
    env = {**os.environ, variable: "abc", "WORLD_SIZE": "2"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"refused: {variable}='abc'" in done.stdout and "integer" in done.stdout
    assert "ValueError: invalid literal" not in done.stderr


def test_get_rank_names_the_variable(monkeypatch):
    from fulmen.utilities.rank_zero import get_rank

    monkeypatch.setenv("LOCAL_RANK", "abc")
    with pytest.raises(ConfigurationError, match=r"LOCAL_RANK='abc' is not a rank: it must be a "
                       r"non-negative integer"):
        get_rank()


def test_a_callback_class_instead_of_an_instance_says_pass_an_instance():
    with pytest.raises(ConfigurationError, match=r"callbacks got the class "
                       r"fulmen.callbacks.checkpoint.ModelCheckpoint, not an instance of it: pass "
                       r"an instance, ModelCheckpoint\(\)"):
        fulmen.Trainer(callbacks=[ModelCheckpoint], logger=False)
    with pytest.raises(ConfigurationError, match=r"Lite\(callbacks=...\) got the class "
                       r"fulmen.callbacks.checkpoint.ModelCheckpoint, not an instance of it: pass "
                       r"an instance, callbacks=\[ModelCheckpoint\(\)\]"):
        fulmen.Lite(accelerator="cpu", callbacks=[ModelCheckpoint])


def test_lite_load_into_state_from_a_bare_tensor_says_what_the_file_holds(tmp_path: Path):
    torch.save(torch.ones(3, 2), tmp_path / "tensor.pt")
    lite = fulmen.Lite(accelerator="cpu")
    with pytest.raises(ConfigurationError, match=r"holds a bare tensor of shape \[3, 2\], not a "
                       r"dictionary of named entries.*Read it with lite.load\("):
        lite.load(tmp_path / "tensor.pt", {"model": torch.nn.Linear(2, 2)})
    assert torch.equal(lite.load(tmp_path / "tensor.pt"), torch.ones(3, 2))


CONFIGS = {
    "trainer: fast\nmodel:\n  class_path: tiny_models.TinyModule\n":
        "`trainer:` holds the str 'fast', but it must be a mapping of Trainer arguments",
    ("trainer:\n  callbacks:\n    - class_path: fulmen.callbacks.ModelCheckpoint\n"
     "      init_args:\n        save_top_k: lots\nmodel:\n  class_path: tiny_models.TinyModule\n"):
        "trainer.callbacks[0] (fulmen.callbacks.ModelCheckpoint): init_args.save_top_k: "
        "expected int, got 'lots'",
    ("trainer:\n  callbacks:\n    - class_path: fulmen.callbacks.ModelCheckpoint\n"
     "      init_args:\n        save_topk: 2\nmodel:\n  class_path: tiny_models.TinyModule\n"):
        "unknown key 'trainer.callbacks[0].init_args.save_topk'; did you mean "
        "'trainer.callbacks[0].init_args.save_top_k'? ModelCheckpoint takes",
    ("trainer:\n  callbacks:\n    - class_path: fulmen.callbacks.EarlyStoping\n"
     "model:\n  class_path: tiny_models.TinyModule\n"):
        "trainer.callbacks[0] (fulmen.callbacks.EarlyStoping): class_path cannot be imported",
}


@pytest.mark.parametrize(("yaml_text", "expected"), list(CONFIGS.items()))
def test_a_bad_cli_yaml_names_the_key_and_what_it_expects(tmp_path: Path, capsys, yaml_text,
                                                         expected):
    from fulmen.cli import main

    config = tmp_path / "config.yaml"
    config.write_text(yaml_text)
    assert main(["fit", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "Unable to load config" not in err and "Namespace(" not in err
