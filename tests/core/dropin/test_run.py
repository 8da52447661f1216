"""``fulmen run``: unmodified Lightning scripts on fulmen, in this process and the processes it
starts, without touching other programs' imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fulmen.dropin import finder, names
from fulmen.errors import LightningAttributeError

TRAIN = """
import lightning as L
import pytorch_lightning as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.callbacks.model_checkpoint import ModelCheckpoint as FromFile
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.utilities.types import STEP_OUTPUT
from lightning.fabric import Fabric
from lightning_fabric.utilities.seed import seed_everything
import fulmen, sys

assert L.LightningModule is pl.LightningModule is fulmen.Module
assert Fabric is fulmen.Lite and FromFile is ModelCheckpoint

class Model(BoringModel):
    def training_step(self, batch):  # no batch_idx, as Lightning allows
        return {"loss": self.step(batch)}

if __name__ == "__main__":
    seed_everything(7)
    trainer = L.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, **dict(a.split("=") for a in sys.argv[1:]))
    trainer.fit(Model())
    print(f"RESULT rank={trainer.global_rank} steps={trainer.global_step} "
          f"version={L.__version__}", flush=True)
"""


def fulmen_run(tmp_path: Path, source: str, *args: str, prefix: tuple[str, ...] = (),
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    command = [*prefix, "-m", "fulmen", "run", str(script), *args] if prefix else [
        sys.executable, "-m", "fulmen", "run", str(script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env={**_env(), "OMP_NUM_THREADS": "1"})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items()
            if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}


def test_unmodified_script_runs(tmp_path: Path) -> None:
    done = fulmen_run(tmp_path, TRAIN)
    assert done.returncode == 0, done.stderr
    assert f"RESULT rank=0 steps=2 version={names.LIGHTNING_VERSION}" in done.stdout


def test_ddp_ranks_started_by_fulmen_see_lightning_names(tmp_path: Path) -> None:
    done = fulmen_run(tmp_path, TRAIN, "strategy=ddp", "devices=2", "accelerator=cpu")
    assert done.returncode == 0, done.stderr
    assert "RESULT rank=0 steps=2" in done.stdout and "RESULT rank=1 steps=2" in done.stdout
    assert "Error in sitecustomize" not in done.stderr


def test_children_run_the_environments_own_sitecustomize(tmp_path: Path) -> None:
    """The boot sitecustomize installs the finder, then hands over to the environment's."""
    from fulmen.dropin.run import BOOT

    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.OWN_SITE = True\n")
    code = ("import builtins, sys, lightning.pytorch as pl, fulmen; "
            "print(builtins.OWN_SITE, pl.Trainer is fulmen.Trainer)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**_env(), "FULMEN_LIGHTNING_NAMES": "1",
                               "PYTHONPATH": f"{BOOT}:{own}"})
    assert done.stdout.strip() == "True True", done.stderr
    assert "Error in sitecustomize" not in done.stderr


def test_under_torchrun(tmp_path: Path) -> None:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", "2"]
    done = fulmen_run(tmp_path, TRAIN, "strategy=ddp", "devices=2", "accelerator=cpu",
                      prefix=tuple(torchrun))
    assert done.returncode == 0, done.stderr
    assert "RESULT rank=1 steps=2" in done.stdout


def test_missing_counterpart_is_named(tmp_path: Path) -> None:
    """``from x import y`` of a name fulmen does not serve is an ImportError naming it and what
    is served there; ``import`` of an unserved module a ModuleNotFoundError naming it."""
    done = fulmen_run(tmp_path, "from lightning.pytorch.callbacks import Nope\n")
    assert done.returncode == 1
    assert "LightningNameError: 'lightning.pytorch.callbacks.Nope' has no fulmen " \
           "counterpart" in done.stderr
    assert "ModelCheckpoint" in done.stderr  # what does exist there
    done = fulmen_run(tmp_path, "import pytorch_lightning.loops.nope\n")
    assert "LightningModuleNotFoundError: module 'pytorch_lightning.loops.nope' has no fulmen " \
           "counterpart" in done.stderr
    assert "pytorch_lightning.loops.fit_loop" in done.stderr


def test_script_exit_status_and_arguments(tmp_path: Path) -> None:
    done = fulmen_run(tmp_path, "import sys\nprint(sys.argv)\nsys.exit(3)\n", "--lr", "0.1")
    assert done.returncode == 3
    assert f"[{str(tmp_path / 'train.py')!r}, '--lr', '0.1']" in done.stdout


def test_bad_command_lines(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "fulmen", "run", "nope.py"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 2 and "'nope.py' is not a file" in done.stderr
    done = subprocess.run([sys.executable, "-m", "fulmen", "run"], capture_output=True, text=True)
    assert done.returncode == 2 and "fulmen run SCRIPT" in done.stderr


def test_other_processes_are_left_alone(tmp_path: Path) -> None:
    """Without fulmen run, ``import lightning`` is whatever the environment has (the real
    package where it is installed, as in the dev environment: tests/dropin_corpus uses it, and
    checks the served and the real names side by side); the boot folder alone, without the
    variable, installs nothing."""
    from fulmen.dropin.run import BOOT

    code = ("import importlib.util, sys; s = importlib.util.find_spec('lightning'); "
            "print(s is None or not isinstance(s.loader, __import__('fulmen.dropin.finder')"
            ".dropin.finder.AliasLoader))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**_env(), "PYTHONPATH": str(BOOT)})
    assert done.stdout.strip() == "True", done.stderr


def test_finder_in_process() -> None:
    assert "lightning" not in sys.modules
    try:
        finder.install()
        import lightning.pytorch as pl  # type: ignore[import-not-found]
        from lightning.pytorch.strategies import DDPStrategy  # type: ignore[import-not-found]
        from lightning.pytorch.utilities.rank_zero import (  # type: ignore[import-not-found]
            rank_zero_only,
        )

        import fulmen
        from fulmen.utilities import rank_zero_only as ours_rank_zero_only
        from fulmen_strategies import DDPStrategy as Ours

        assert pl.Trainer is fulmen.Trainer and DDPStrategy is Ours
        assert rank_zero_only is ours_rank_zero_only  # from a module without __all__
        from lightning.pytorch import cli_lightning_logo  # type: ignore[import-not-found]
        from lightning.pytorch.utilities.imports import (  # type: ignore[import-not-found]
            _RICH_AVAILABLE,
        )

        assert bool(_RICH_AVAILABLE) and callable(cli_lightning_logo)
        assert "LightningModule" in pl.__all__ and "Trainer" in dir(pl)
        with pytest.raises(LightningAttributeError, match=r"lightning\.pytorch\.Nope"):
            pl.Nope  # noqa: B018
        assert not hasattr(pl, "_private")
    finally:
        finder.uninstall()
    assert not any(n.partition(".")[0] in names.ROOTS for n in sys.modules)
