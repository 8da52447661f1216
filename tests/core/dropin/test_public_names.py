"""Lightning's whole public API resolves under ``fulmen run``.

The list is built from the INSTALLED Lightning, in a subprocess without the hook:

- modules: ``lightning.pytorch``, ``lightning.fabric`` and every module
  ``pkgutil.walk_packages`` finds under them with no path component starting with ``_``
  (``lightning.pytorch.loops.fit_loop`` is in, ``lightning.pytorch._graveyard`` is out). Walking
  imports each module; one that cannot be imported here (an optional library it needs is
  missing) is left out of the list and printed, so the test checks what this environment can
  compare;
- names, per module: its ``__all__`` when it defines one, else its public attributes that are
  not modules and whose ``__module__`` is Lightning's own or ``lightning_utilities``' (what the
  module defines, and what it imports from Lightning's tree: Lightning's code imports those
  from there, e.g. ``from lightning.pytorch.core.saving import save_hparams_to_yaml``); names
  starting with ``_`` are left out, even where ``__all__`` lists them.

A second subprocess installs the finder (:func:`fulmen.dropin.run.activate`, as ``fulmen run``
does) and imports every module (under ``pytorch_lightning`` / ``lightning_fabric`` too) and
reads every name. The counts are printed; any module or name that does not resolve fails the
test, except those in :data:`REMAINING`, which the test checks are still missing (so the list
only shrinks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Names known not to resolve yet, as ``module:name`` (empty: every public name resolves).
#: Remove an entry once it resolves; the test fails while a listed name resolves.
REMAINING: set[str] = set()

WALK = r"""
import importlib, json, pkgutil, sys, types, warnings

warnings.simplefilter("ignore")
OWN = {"lightning", "pytorch_lightning", "lightning_fabric", "lightning_utilities"}
found, skipped = {}, {}
for root in ("lightning.pytorch", "lightning.fabric"):
    package = importlib.import_module(root)
    walked = pkgutil.walk_packages(package.__path__, root + ".",
                                   onerror=lambda name: skipped.setdefault(name, "walk"))
    for name in [root, *(m.name for m in walked)]:
        if any(part.startswith("_") for part in name.split(".")):
            continue
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # an optional library it needs is missing here
            skipped[name] = f"{type(exc).__name__}: {exc}"
            continue
        declared = getattr(module, "__all__", None)
        if declared is None:
            declared = [k for k, v in vars(module).items()
                        if not isinstance(v, types.ModuleType)
                        and str(getattr(v, "__module__", None)).split(".")[0] in OWN]
        found[name] = sorted({n for n in declared if not n.startswith("_")})
json.dump({"modules": found, "skipped": skipped}, sys.stdout)
"""

CHECK = r"""
import importlib, json, sys, warnings

warnings.simplefilter("ignore")
from fulmen.dropin.run import activate

activate()
api = json.load(open(sys.argv[1]))
missing_modules, missing_names = {}, {}
aliases = {"lightning.pytorch": "pytorch_lightning", "lightning.fabric": "lightning_fabric"}
for name, attributes in api.items():
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        missing_modules[name] = f"{type(exc).__name__}: {exc}"
        continue
    for prefix, alias in aliases.items():
        if name == prefix or name.startswith(prefix + "."):
            other = alias + name[len(prefix):]
            try:
                importlib.import_module(other)
            except ImportError as exc:
                missing_modules[other] = f"{type(exc).__name__}: {exc}"
    for attribute in attributes:
        try:
            getattr(module, attribute)
        except AttributeError as exc:
            missing_names[f"{name}:{attribute}"] = f"{type(exc).__name__}: {exc}"
json.dump({"modules": missing_modules, "names": missing_names}, sys.stdout)
"""


def _environment() -> dict[str, str]:
    """This process's environment without ``fulmen run``'s variable and boot folder."""
    from fulmen.dropin.run import BOOT, ENV

    env = {k: v for k, v in os.environ.items() if k != ENV}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(BOOT)]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run(code: str, *args: str) -> dict[str, dict[str, str]]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=600, env=_environment())
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, dict[str, str]] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def lightning_api(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Lightning's public modules and names, read from the installed Lightning."""
    if subprocess.run([sys.executable, "-c", "import lightning"], env=_environment(),
                      capture_output=True).returncode != 0:
        pytest.skip("no Lightning installed to read its public API from")
    walked = _run(WALK)
    if walked["skipped"]:
        print(f"Lightning modules left out (cannot be imported here): {walked['skipped']}")
    path = tmp_path_factory.mktemp("api") / "api.json"
    path.write_text(json.dumps(walked["modules"]))
    return path


def test_every_public_module_and_name_resolves(lightning_api: Path) -> None:
    api: dict[str, list[str]] = json.loads(lightning_api.read_text())
    missing = _run(CHECK, str(lightning_api))
    n_modules, n_names = len(api), sum(len(v) for v in api.values())
    bad_names = set(missing["names"])
    print(f"\nLightning's public API under fulmen run: "
          f"{n_modules - len(missing['modules'])} of {n_modules} modules and "
          f"{n_names - len(bad_names)} of {n_names} names resolve "
          f"({len(bad_names & REMAINING)} known to be missing: REMAINING)")
    assert not missing["modules"], f"modules that do not import: {missing['modules']}"
    unexpected = {k: v for k, v in missing["names"].items() if k not in REMAINING}
    assert not unexpected, f"names that do not resolve: {json.dumps(unexpected, indent=1)}"
    listed = {entry for entry in REMAINING if entry.partition(":")[0] in api}
    now_resolving = sorted(listed - bad_names)
    assert not now_resolving, f"these resolve now; remove them from REMAINING: {now_resolving}"
