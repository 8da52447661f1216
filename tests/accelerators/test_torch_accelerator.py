"""The ``torch_accelerator`` plugin: a device type torch exposes through ``torch.accelerator``
(here a fake PrivateUse1 backend registered from Python, in a subprocess) is selectable by its
name; ``cpu``/``cuda``/``mps`` keep their own plugins; listing imports no torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fulmen import AcceleratorSpec, PluginError
from fulmen.kernel.catalog import Catalog
from fulmen.kernel.manager import PluginInfo

SCRIPT = Path(__file__).parent / "scripts" / "fake_privateuse1.py"


def run(*args: str) -> dict:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(150)
def test_a_privateuse1_backend_is_selected_by_name_and_driven_through_its_module():
    got = run("--backend")
    assert (got["name"], got["device_type"], got["count"]) == ("fakedev", "fakedev", 3)
    assert got["devices"] == ["fakedev:0"]  # one process: single_device on the first device
    assert got["calls"] == [["set_device", 2], ["synchronize", "None"], ["empty_cache"]]
    assert got["stats"] == {"allocated_bytes.all.current": 7}
    assert got["auto_strategy"] == "ddp"  # several devices with a distributed backend
    assert got["ddp_backend"] == "fakeccl"  # torch's default for the device type


@pytest.mark.timeout(150)
def test_without_a_registered_collectives_backend_ddp_is_refused_at_composition():
    got = run()
    error = got["ddp_error"]
    assert "names no distributed backend for device type 'fakedev'" in error
    assert "Accelerators with one: " in error and "'cpu'" in error
    assert "register_backend" in error and "process_group_backend=" in error
    assert "no plugin answered fulmen_default_strategy" in got["auto_error"]  # and says so


def spec(name: str, fallback: bool, aliases: tuple[str, ...] = ()) -> AcceleratorSpec:
    return AcceleratorSpec(name=name, target="pkg.mod:Cls", device_type=name, aliases=aliases,
                           fallback=fallback)


def test_a_fallback_record_gives_way_to_a_dedicated_plugin():
    """The generic plugin yields whatever torch exposes (``cuda`` on a CUDA build): the ``cuda``
    plugin keeps the name, with no clash; a name no one else registers stays the fallback's."""
    dedicated, generic = PluginInfo("cuda", "x"), PluginInfo("torch_accelerator", "y")
    catalog = Catalog({"accelerator": [(generic, spec("cuda", True)),
                                       (dedicated, spec("cuda", False, ("gpu",))),
                                       (generic, spec("xpu", True))]}, {})
    assert catalog.find("accelerator", "cuda").plugin is dedicated
    assert catalog.find("accelerator", "xpu").plugin is generic
    with pytest.raises(PluginError, match="'xpu' is registered twice"):
        Catalog({"accelerator": [(generic, spec("xpu", True)), (dedicated, spec("xpu", True))]},
                {})


def test_listing_imports_no_torch_and_shows_no_generic_names():
    code = ("import sys, fulmen.cli\n"
            "fulmen.cli.main(['plugins', '--json'])\n"
            "assert 'torch' not in sys.modules, 'listing imported torch'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "torch_accelerator" in proc.stdout
