"""Bad input to the DeepSpeed strategies, the config's rules, and the messages a user gets when
the plugin is disabled or its distribution is not installed. No processes are started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

import fulmen
from fulmen import ConfigurationError

pytest.importorskip("deepspeed")

from fulmen_deepspeed import DeepSpeedStrategy
from fulmen_deepspeed.config import fill, read_config


def trainer(**kwargs: Any) -> fulmen.Trainer:
    options = {"accelerator": "cpu", "devices": 2, "logger": False,
               "enable_progress_bar": False, **kwargs}
    return fulmen.Trainer(**options)


def test_each_name_composes_its_zero_stage() -> None:
    stages = {"deepspeed": (2, False, False), "deepspeed_stage_1": (1, False, False),
              "deepspeed_stage_2": (2, False, False), "deepspeed_stage_2_offload": (2, True, False),
              "deepspeed_stage_3": (3, False, False), "deepspeed_stage_3_offload": (3, True, True)}
    for name, (stage, opt, params) in stages.items():
        strategy = trainer(strategy=name).strategy
        zero = strategy.options.zero_optimization
        assert (strategy.name, strategy.stage) == (name, stage)
        assert (zero.offload_optimizer is not None, zero.offload_param is not None) == (opt, params)
        assert type(trainer(strategy=name).strategy.launcher).__name__ == "ScriptLauncher"


def test_an_instance_is_matched_to_the_deepspeed_record() -> None:
    t = trainer(strategy=DeepSpeedStrategy(stage=3), precision="bf16-mixed")
    assert t.strategy.name == "deepspeed" and t.strategy.launcher is not None


def test_stage_4_is_refused_with_the_stages_that_exist() -> None:
    with pytest.raises(ConfigurationError, match=r"stage=4.*ZeRO has stages 0 .*3 \(parameters"):
        DeepSpeedStrategy(stage=4)
    with pytest.raises(ConfigurationError, match=r"stage.*less than or equal|ZeRO has stages"):
        DeepSpeedStrategy(config={"zero_optimization": {"stage": 4}})


def test_offload_needs_a_stage_that_supports_it() -> None:
    with pytest.raises(ConfigurationError, match=r"stage=2, offload_parameters=True.*only ZeRO "
                       r"stage 3.*deepspeed_stage_3_offload"):
        DeepSpeedStrategy(stage=2, offload_parameters=True)
    with pytest.raises(ConfigurationError, match=r"stage=0, offload_optimizer=True.*stage 1, 2 "
                       r"or 3"):
        DeepSpeedStrategy(stage=0, offload_optimizer=True)
    with pytest.raises(ConfigurationError, match="offload_parameters=True"):
        DeepSpeedStrategy(config={"zero_optimization": {"stage": 1,
                                                        "offload_param": {"device": "cpu"}}})


def test_stage_argument_and_config_stage_must_agree() -> None:
    with pytest.raises(ConfigurationError, match=r"stage=3\) but its config says "
                       r"zero_optimization.stage=2"):
        DeepSpeedStrategy(stage=3, config={"zero_optimization": {"stage": 2}})
    assert DeepSpeedStrategy(config={"zero_optimization": {"stage": 1}}).stage == 1


def test_a_config_file_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigurationError, match=r"nope.json'\): no such file"):
        DeepSpeedStrategy(config=str(missing))


def test_a_config_file_that_is_not_json_shows_where(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    path.write_text('{\n  "zero_optimization": {"stage": 2},\n  "bf16": {"enabled": true,}\n}\n')
    with pytest.raises(ConfigurationError) as info:
        DeepSpeedStrategy(config=path)
    message = str(info.value)
    assert "is not valid JSON" in message and "line 3 column" in message
    assert '"bf16": {"enabled": true,}' in message and "^" in message


def test_a_valid_config_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"zero_optimization": {"stage": 3, "overlap_comm": False}}))
    strategy = DeepSpeedStrategy(config=path)
    assert strategy.stage == 3 and strategy.options.zero_optimization.overlap_comm is False


def test_invalid_settings_name_the_key_and_value() -> None:
    with pytest.raises(ConfigurationError, match=r"zero_optimization.reduce_bucket_size: .*"
                       r"greater than 0 \(got -5\)"):
        DeepSpeedStrategy(config={"zero_optimization": {"reduce_bucket_size": -5}})
    with pytest.raises(ConfigurationError, match=r"offload_optimizer\.device"):
        DeepSpeedStrategy(config={"zero_optimization": {"offload_optimizer": {"device": "gpu"}}})


def test_64_true_is_refused_by_the_records_precisions() -> None:
    with pytest.raises(ConfigurationError, match=r"strategy 'deepspeed_stage_2' does not support "
                       r"precision '64-true'; it supports .*'bf16-mixed'"):
        trainer(strategy="deepspeed_stage_2", precision="64-true")


def test_config_precision_contradicting_the_trainer_fails_at_construction() -> None:
    strategy = DeepSpeedStrategy(config={"bf16": {"enabled": True}})
    with pytest.raises(ConfigurationError, match=r"enables bf16 .*precision='32-true'.*Set "
                       r"Trainer/Lite\(precision='bf16-mixed'\), or remove the 'bf16' section"):
        trainer(strategy=strategy)
    assert trainer(strategy=DeepSpeedStrategy(config={"bf16": {"enabled": True}}),
                   precision="bf16-mixed").precision == "bf16-mixed"


def test_trainer_flags_fill_the_config() -> None:
    config = fill(read_config({"zero_optimization": {"stage": 3}}), precision="bf16-mixed",
                  world_size=2, accumulate_grad_batches=4, gradient_clip_val=0.5, batch_size=8)
    assert config["bf16"] == {"enabled": True} and "fp16" not in config
    assert (config["gradient_accumulation_steps"], config["gradient_clipping"]) == (4, 0.5)
    assert (config["train_micro_batch_size_per_gpu"], config["train_batch_size"]) == (8, 64)
    assert config["managed_gradient_accumulation"] is False
    assert fill(read_config(None), precision="16-mixed", world_size=1)["fp16"]["enabled"]


@pytest.mark.parametrize(("user", "flags", "pattern"), [
    ({"gradient_accumulation_steps": 4}, {"accumulate_grad_batches": 2},
     r"gradient_accumulation_steps=4 but Trainer\(accumulate_grad_batches=2\).*Set "
     r"Trainer\(accumulate_grad_batches=4\) and remove 'gradient_accumulation_steps'"),
    ({"gradient_clipping": 1.0}, {"gradient_clip_val": None},
     r"gradient_clipping=1.0 but Trainer\(gradient_clip_val=None\).*gradient_clip_val=1.0"),
    ({"train_micro_batch_size_per_gpu": 16}, {"batch_size": 8},
     r"train_micro_batch_size_per_gpu=16 but the training dataloader's batch_size=8"),
    ({"train_batch_size": 100}, {"batch_size": 8},
     r"train_batch_size=100, but batch_size 8 x accumulate_grad_batches 1 x 2 processes = 16"),
    ({"fp16": {"enabled": True}}, {"precision": "bf16-mixed"},
     r"enables fp16 .*precision='bf16-mixed'.*Set Trainer\(precision='16-mixed'\)"),
    ({}, {"gradient_clip_val": 1.0, "gradient_clip_algorithm": "value"},
     r"gradient_clip_algorithm='value'\): DeepSpeed clips by norm only"),
    ({"managed_gradient_accumulation": True}, {}, r"fulmen's loop decides when"),
])
def test_contradictions_name_both_settings(user: dict[str, Any], flags: dict[str, Any],
                                           pattern: str) -> None:
    options = {"precision": "32-true", "world_size": 2, **flags}
    with pytest.raises(ConfigurationError, match=pattern):
        fill(read_config(user), **options)


def test_the_strategy_reads_the_run_flags_the_trainer_hands_it() -> None:
    """The flags come through the public ``strategy.run_config`` (set by the Trainer before it
    sets the module up; tests/core/test_contracts.py checks that it does)."""
    from fulmen.api import RunConfig

    t = trainer(strategy=DeepSpeedStrategy(config={"gradient_accumulation_steps": 4}),
                accumulate_grad_batches=2)
    t.strategy.run_config = RunConfig("Trainer", accumulate_grad_batches=2)
    t.strategy.setup_module(torch.nn.Linear(2, 2))
    with pytest.raises(ConfigurationError, match=r"Trainer\(accumulate_grad_batches=2\)"):
        t.strategy.deepspeed_config()
    t.strategy.run_config = RunConfig()  # Lite: the config decides
    assert t.strategy.deepspeed_config()["gradient_accumulation_steps"] == 4


def test_clipping_by_hand_is_refused_with_the_setting_to_use() -> None:
    strategy = trainer(strategy="deepspeed").strategy
    with pytest.raises(ConfigurationError, match=r"clips inside its engine.*gradient_clipping"):
        strategy.clip_gradients(torch.nn.Linear(1, 1), None, 2.0)


def test_consolidate_refuses_what_is_not_a_checkpoint(tmp_path: Path) -> None:
    from fulmen_deepspeed import consolidate

    with pytest.raises(ConfigurationError, match="not a directory"):
        consolidate(tmp_path / "x.pt")
    with pytest.raises(ConfigurationError, match="holds no DeepSpeed checkpoint"):
        consolidate(tmp_path)
    cli = Path(sys.executable).parent / "fulmen-deepspeed"
    done = subprocess.run([str(cli), "consolidate", str(tmp_path), str(tmp_path / "o.pt")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "holds no DeepSpeed checkpoint" in done.stderr


def test_listing_plugins_imports_neither_torch_nor_deepspeed() -> None:
    code = ("import sys, fulmen; fulmen.get_plugin_manager().catalog(); "
            "import fulmen_deepspeed; "
            "print(sorted(m for m in ('torch', 'deepspeed', 'fulmen_deepspeed.strategy') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_disabled_plugin_says_so(plugin_env: pytest.MonkeyPatch) -> None:
    plugin_env.setenv("FULMEN_DISABLE_PLUGINS", "deepspeed")
    fulmen.reload_plugins()
    with pytest.raises(ConfigurationError, match=r"strategy='deepspeed_stage_3': the strategy is "
                       r"provided by plugin 'deepspeed' \(fulmen-deepspeed .*\), which is "
                       r"disabled by FULMEN_DISABLE_PLUGINS"):
        trainer(strategy="deepspeed_stage_3")


def test_without_the_distribution_the_error_says_what_to_install(tmp_path: Path) -> None:
    """A site folder that mirrors this environment's site-packages minus fulmen-deepspeed (its
    dist-info and editable-path file): the interpreter sees the distribution as not installed."""
    site = Path(sysconfig.get_paths()["purelib"])
    mirror = tmp_path / "site"
    mirror.mkdir()
    for entry in site.iterdir():
        if "fulmen_deepspeed" in entry.name:
            continue
        (mirror / entry.name).symlink_to(entry)
    code = textwrap.dedent(f"""
        import site, sys
        site.addsitedir({str(mirror)!r})
        import fulmen
        try:
            fulmen.Trainer(strategy="deepspeed", accelerator="cpu", devices=2, logger=False)
        except fulmen.ConfigurationError as exc:
            print(exc)
        import importlib.util
        print("importable:", importlib.util.find_spec("fulmen_deepspeed") is not None)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FULMEN_")}
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("strategy='deepspeed': no installed plugin registers this strategy; it comes with "
            "the 'fulmen-deepspeed' distribution (pip install 'fulmen[deepspeed]')") in done.stdout
    assert "importable: False" in done.stdout


def test_a_misspelt_zero_setting_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigurationError, match=r"zero_optimization has no setting "
                       r"'overlap_com'\. Did you mean 'overlap_comm'\?"):
        DeepSpeedStrategy(config={"zero_optimization": {"overlap_com": True}})
    advanced = DeepSpeedStrategy(config={"zero_optimization": {"stage": 3,
                                                               "zero_quantized_weights": False}})
    assert advanced.options.model_dump()["zero_optimization"]["zero_quantized_weights"] is False
