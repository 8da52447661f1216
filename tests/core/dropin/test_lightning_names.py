"""How ``fulmen run`` answers for Lightning names it does not serve, and Lightning's
distribution metadata under it. Each check runs in a fresh process with the finder installed
(:func:`fulmen.dropin.run.activate`, as ``fulmen run`` does)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

from fulmen.dropin import names


def _run(code: str) -> subprocess.CompletedProcess[str]:
    from fulmen.dropin.run import BOOT, ENV

    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                        if p and p != str(BOOT))
    script = "from fulmen.dropin.run import activate\nactivate()\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**env, "OMP_NUM_THREADS": "1"})


def test_missing_names_read_as_attribute_errors_and_import_errors() -> None:
    done = _run("""
        import importlib
        import lightning.pytorch.callbacks as callbacks
        from fulmen.errors import (LightningAttributeError, LightningModuleNotFoundError,
                                   LightningNameError)

        # reading: an AttributeError, so feature checks work
        assert not hasattr(callbacks, "Nope")
        assert getattr(callbacks, "Nope", None) is None
        try:
            callbacks.Nope
        except LightningAttributeError as exc:
            assert isinstance(exc, AttributeError) and exc.name == "Nope"
            assert "'lightning.pytorch.callbacks.Nope' has no fulmen counterpart" in str(exc)
            assert "ModelCheckpoint" in str(exc)  # what is served there
        else:
            raise AssertionError("no error")
        # from-import: an ImportError naming the name, with the same help
        try:
            from lightning.pytorch.callbacks import Nope  # noqa: F401
        except LightningNameError as exc:
            assert isinstance(exc, ImportError) and not isinstance(exc, AttributeError)
            assert exc.name == "lightning.pytorch.callbacks.Nope"
            assert "has no fulmen counterpart" in str(exc) and "ModelCheckpoint" in str(exc)
        else:
            raise AssertionError("no error")
        # the same under pytorch_lightning, and for a name that is no module
        try:
            from pytorch_lightning import nope  # noqa: F401
        except ImportError as exc:
            assert "pytorch_lightning.nope" in str(exc)
        else:
            raise AssertionError("no error")
        # a module: ModuleNotFoundError naming it
        for name in ("lightning.pytorch.nope", "lightning_fabric.utilities.nope"):
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                assert isinstance(exc, LightningModuleNotFoundError) and exc.name == name
            else:
                raise AssertionError("no error")
        # served names and modules keep working
        from lightning.pytorch.callbacks import ModelCheckpoint
        from lightning.fabric.accelerators import XLAAccelerator, find_usable_cuda_devices
        assert hasattr(callbacks, "ModelPruning") and not XLAAccelerator.is_available()
        print("OK")
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"


def test_lightning_distributions_report_the_version_fulmen_follows() -> None:
    """``importlib.metadata`` answers for ``lightning``, ``pytorch-lightning`` and
    ``lightning-fabric`` with fulmen's distributions (the Summary says so), whatever Lightning is
    installed, and hands out none of an installed Lightning's files."""
    done = _run(f"""
        import importlib.metadata as metadata
        from lightning_utilities.core.imports import RequirementCache, package_available
        import lightning, pytorch_lightning, lightning_fabric
        import lightning.pytorch, lightning.fabric

        expected = {names.LIGHTNING_VERSION!r}
        for name in ("lightning", "pytorch-lightning", "lightning-fabric", "Lightning_Fabric",
                     "pytorch_lightning"):
            assert metadata.version(name) == expected, (name, metadata.version(name))
            dist = metadata.distribution(name)
            assert "served by fulmen" in dist.metadata["Summary"]
            assert dist.files is None and dist.read_text("RECORD") is None
            assert dist.requires is None and not list(dist.entry_points)
        for module in (lightning, pytorch_lightning, lightning_fabric, lightning.pytorch,
                       lightning.fabric):
            assert module.__version__ == expected, module
        assert RequirementCache("lightning>=2.0") and RequirementCache("pytorch-lightning>=2.0")
        assert RequirementCache("lightning-fabric>=2.0") and not RequirementCache("lightning>=9")
        assert package_available("lightning") and package_available("pytorch_lightning")
        assert {{d.metadata["Name"] for d in metadata.distributions()}} >= {{
            "lightning", "pytorch-lightning", "lightning-fabric"}}
        import sys
        assert not any("served by fulmen" in (d.metadata["Summary"] or "")
                       for d in metadata.distributions(path=sys.path))
        print("OK")
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"


def test_without_the_hook_metadata_is_the_environments() -> None:
    """Only ``fulmen run`` serves the distributions: a plain process sees what is installed."""
    code = ("import importlib.metadata as m\n"
            "try:\n    print(m.distribution('lightning').metadata['Summary'])\n"
            "except m.PackageNotFoundError:\n    print('none')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "served by fulmen" not in done.stdout


def test_every_listed_name_has_a_fulmen_home() -> None:
    """Static: each public name of :data:`~fulmen.dropin.lightning_api.PUBLIC` is served (the
    module's own entry or :data:`~fulmen.dropin.names.SHARED`), and each target names a fulmen
    module that exists (``fulmen.trainer.states`` comes with another change)."""
    pending = {"fulmen.trainer.states"}
    unserved = [f"{m}:{n}" for m, mm in names.MODULES.items() for n in mm.shared
                if n not in mm.names and n not in names.SHARED]
    assert not unserved
    targets = {t for mm in names.MODULES.values() for t in mm.names.values()}
    targets |= set(names.SHARED.values())
    modules = {t.partition(":")[0] for t in targets} - pending
    missing = sorted(m for m in modules if importlib.util.find_spec(m) is None)
    assert not missing, missing


@pytest.mark.parametrize("fullname", ["lightning.pytorch.loops.fit_loop",
                                      "pytorch_lightning.utilities.parsing",
                                      "lightning_fabric.utilities.cloud_io"])
def test_modules_are_listed_under_every_root(fullname: str) -> None:
    assert names.lookup(fullname) is not None


def test_star_import_takes_what_resolves() -> None:
    """``from module import *`` imports the served names that resolve here (a name whose
    counterpart cannot be imported in this environment is left out, not an error)."""
    done = _run("""
        from lightning.pytorch.callbacks import *  # noqa: F403
        from lightning.pytorch.trainer.states import *  # noqa: F403
        import lightning.pytorch.callbacks as callbacks
        assert "ModelPruning" in callbacks.__all__ and ModelPruning is callbacks.ModelPruning
        print("OK")
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"
