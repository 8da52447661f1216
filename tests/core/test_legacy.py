"""Legacy spellings are accepted with a warning that shows the current spelling."""

import pytest

import fulmen
from fulmen import ConfigurationError, FulmenDeprecationWarning


@pytest.fixture
def two_gpus(fake_hardware, monkeypatch, fake_dists):
    """Make 'gpu' mean the fake accelerator: disable the real cuda plugin and alias the fake."""
    module = fake_dists.unique("fakealias")
    fake_dists.add("fulmen-fakealias", {"fakealias": module}, {module: f"""
        from fulmen import AcceleratorSpec, hookimpl

        @hookimpl
        def fulmen_accelerators():
            yield AcceleratorSpec(name="fakecuda", aliases=["gpu"],
                                  target="{fake_hardware.__name__}:FakeGPU")
        """})
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "cuda")
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    fake_dists.reload()


def test_gpus_becomes_accelerator_gpu_and_devices(two_gpus):
    with pytest.warns(FulmenDeprecationWarning, match=r"Trainer\(gpus=2\) is deprecated; use "
                      r"Trainer\(accelerator='gpu', devices=2\)"):
        trainer = fulmen.Trainer(gpus=2, strategy="fake_ddp")
    assert (trainer.accelerator.name, trainer.device_ids) == ("fakecuda", [0, 1])


def test_gpus_with_accelerator_ddp_is_the_old_pair(two_gpus):
    with pytest.warns(FulmenDeprecationWarning) as record:
        trainer = fulmen.Trainer(gpus=2, accelerator="fake_ddp")
    messages = " | ".join(str(r.message) for r in record)
    assert "Trainer(accelerator='fake_ddp') is deprecated: 'fake_ddp' is a strategy; use " \
           "Trainer(strategy='fake_ddp', accelerator='gpu')" in messages
    assert (trainer.strategy.name, trainer.accelerator.name, trainer.num_devices) == (
        "fake_ddp", "fakecuda", 2)


def test_a_strategy_name_given_as_accelerator_moves_to_strategy(fake_hardware):
    with pytest.warns(FulmenDeprecationWarning, match=r"use Trainer\(strategy='fake_ddp'\)"):
        trainer = fulmen.Trainer(accelerator="fake_ddp", devices=2)
    assert (trainer.strategy.name, trainer.accelerator.name) == ("fake_ddp", "cpu")


def test_strategy_as_accelerator_and_a_strategy_is_an_error(fake_hardware):
    with pytest.raises(ConfigurationError, match=r"'fake_ddp' is a strategy, and a strategy was "
                       r"given too"):
        fulmen.Trainer(accelerator="fake_ddp", strategy="single_device")


def test_gpus_zero_means_cpu(fake_dists):
    with pytest.warns(FulmenDeprecationWarning, match=r"gpus=0 means the CPU"):
        assert fulmen.Trainer(gpus=0).accelerator.name == "cpu"


def test_gpus_and_devices_together_is_an_error(fake_dists):
    with pytest.raises(ConfigurationError, match=r"Trainer\(gpus=2, devices=1\) sets the devices "
                       r"twice"):
        fulmen.Trainer(gpus=2, devices=1)


def test_gpus_without_a_gpu_warns_then_says_none_was_found(fake_dists):
    with pytest.warns(FulmenDeprecationWarning), pytest.raises(
            ConfigurationError, match=r"accelerator='gpu': no cuda device was found"):
        fulmen.Trainer(gpus=1)


def test_tpu_cores_warns_then_names_the_missing_accelerator(fake_dists):
    with pytest.warns(FulmenDeprecationWarning, match=r"use Trainer\(accelerator='tpu', "
                      r"devices=8\)"), pytest.raises(
            ConfigurationError, match=r"accelerator='tpu' is not a registered accelerator name"):
        fulmen.Trainer(tpu_cores=8)


def test_replace_sampler_ddp_becomes_use_distributed_sampler(fake_dists):
    with pytest.warns(FulmenDeprecationWarning, match=r"use Trainer\(use_distributed_sampler="
                      r"False\)"):
        assert fulmen.Trainer(replace_sampler_ddp=False).use_distributed_sampler is False
    with pytest.raises(ConfigurationError, match="sets the same thing twice"):
        fulmen.Trainer(replace_sampler_ddp=True, use_distributed_sampler=False)


def test_lite_accepts_the_same_legacy_spellings(two_gpus):
    with pytest.warns(FulmenDeprecationWarning, match=r"Lite\(gpus=2\) is deprecated"):
        lite = fulmen.Lite(gpus=2, strategy="fake_ddp")
    assert lite.world_size == 2


@pytest.mark.parametrize(("flag", "value"), [("max_epochs", -2), ("max_epochs", 1.5),
                                             ("accumulate_grad_batches", 0),
                                             ("log_every_n_steps", "5")])
def test_bad_training_flags_are_configuration_errors(fake_dists, flag, value):
    with pytest.raises(ConfigurationError, match=rf"Trainer\({flag}={value!r}\)"):
        fulmen.Trainer(**{flag: value})
