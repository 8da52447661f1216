"""The ``devices`` table of the GPU guide, through a fake accelerator that reports N devices."""

import pytest

import fulmen
from fulmen import ConfigurationError


@pytest.fixture
def four_gpus(fake_hardware, monkeypatch):
    monkeypatch.setenv("FAKE_GPU_COUNT", "4")
    return fake_hardware


@pytest.mark.parametrize(
    ("devices", "parsed"),
    [
        (3, [0, 1, 2]),
        (-1, [0, 1, 2, 3]),
        ([0], [0]),
        ([1, 3], [1, 3]),
        ("3", [0, 1, 2]),
        ("1, 3", [1, 3]),
        ("-1", [0, 1, 2, 3]),
        ("auto", [0, 1, 2, 3]),
        ((2,), [2]),
        ("2,", [2]),
        (" 0 ,1 ", [0, 1]),
    ],
)
def test_devices_table(four_gpus, devices, parsed):
    trainer = fulmen.Trainer(accelerator="fakegpu", devices=devices)
    assert trainer.device_ids == parsed
    assert trainer.num_devices == len(parsed)
    assert trainer.strategy.name == ("single_device" if len(parsed) == 1 else "fake_ddp")


@pytest.mark.parametrize(
    ("devices", "why"),
    [
        ("abc", "it is neither a count nor a list of indices"),
        (-2, "a device count must be a positive int, or -1 for all"),
        (0, "a device count must be a positive int"),
        (2.5, "a float cannot select devices"),
        ("0.5", "it is neither a count nor a list of indices"),
        ([0, 0], "device 0 is listed more than once"),
        ("1,,2", "it has an empty entry between commas"),
        ([], "the list of device indices is empty"),
        ([0, "1"], "device indices must be ints"),
        (5, "5 devices were asked for but only 4 are available"),
        ([1, 7], r"device 7 does not exist \(4 available: indices 0-3\)"),
        (True, "expected a count, indices or 'auto'"),
        ("1,a", "each comma-separated entry must be a device index"),
    ],
)
def test_bad_devices_say_what_was_given_and_what_is_valid(four_gpus, devices, why):
    with pytest.raises(ConfigurationError) as info:
        fulmen.Trainer(accelerator="fakegpu", devices=devices)
    text = str(info.value)
    assert text.startswith(f"devices={devices!r} is not valid for accelerator 'fakegpu': ")
    assert __import__("re").search(why, text), text
    assert "Valid: an int count (2), -1 for all, a list of indices ([0, 1])" in text


@pytest.mark.parametrize("devices", ["abc", -2, 0, 2.5, "0.5", [0, 0], "1,,2", -1, [0]])
def test_cpu_devices_are_a_process_count(fake_dists, devices):
    with pytest.raises(ConfigurationError, match=r"accelerator 'cpu': on the CPU, devices is the "
                       r"number of processes"):
        fulmen.Trainer(accelerator="cpu", devices=devices)


def test_cpu_devices_accept_counts(fake_hardware):
    assert fulmen.Trainer(accelerator="cpu", devices="3").device_ids == [0, 1, 2]
    assert fulmen.Trainer(accelerator="cpu", devices="auto").device_ids == [0]
    assert fulmen.Trainer(accelerator="cpu", devices=2).num_devices == 2


def test_no_fake_gpu_says_none_was_found_and_what_is_available(fake_hardware):
    with pytest.raises(ConfigurationError, match=r"accelerator='fakegpu': no fakegpu device was "
                       r"found \(FAKE_GPU_COUNT is 0\). Available here: 'cpu'"):
        fulmen.Trainer(accelerator="fakegpu", devices=1)
