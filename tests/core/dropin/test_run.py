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
               timeout: float = 120, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    command = [*prefix, "-m", "fulmen", "run", str(script), *args] if prefix else [
        sys.executable, "-m", "fulmen", "run", str(script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env={**_env(), "OMP_NUM_THREADS": "1", **(env or {})})


def lightning_run(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``source`` under plain python with the real Lightning (installed in the dev
    environment), for a side-by-side comparison."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=180, cwd=tmp_path, env={**_env(), "OMP_NUM_THREADS": "1"})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items()
            if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                         "FULMEN_LOOK", "FULMEN_BANNER")}


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


# ---------------------------------------------------------------------------- Lightning's look

LOOK = """
import logging, os, sys
import lightning as L
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.loggers import CSVLogger

if "quiet" in sys.argv:  # a script silencing Lightning's info lines, as Lightning's docs show
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
trainer = L.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=1,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(BoringModel())
csv = CSVLogger(save_dir="csv")
print("DIRS", os.path.relpath(trainer.log_dir),
      os.path.relpath(trainer.checkpoint_callback.dirpath), os.path.relpath(csv.log_dir))
"""
DEVICE_LINES = ("GPU available: False, used: False", "TPU available: False, using: 0 TPU cores")
BANNER_LINES = ("fulmen fit:", "watching for stop notices")


def _dirs(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if line.startswith("DIRS"))


@pytest.mark.skipif(sys.platform != "linux", reason="compares with the real Lightning installed "
                    "in the dev environment (CPU-only lines)")
def test_lightning_look_matches_lightning(tmp_path: Path) -> None:
    """Under fulmen run a Lightning script sees Lightning's world: the default logger, the
    checkpoint folder and an explicit CSVLogger write under ``lightning_logs/``; Lightning's
    device lines are printed (and silenced by the ``lightning.pytorch`` logger's level, as
    Lightning's), fulmen's banner and stop-notice line are not. Side by side with the real
    Lightning running the same script."""
    (tmp_path / "lightning").mkdir()
    (tmp_path / "fulmen").mkdir()
    lightning = lightning_run(tmp_path / "lightning", LOOK)
    served = fulmen_run(tmp_path / "fulmen", LOOK)
    assert _dirs(served) == _dirs(lightning) == (
        "DIRS lightning_logs/version_0 lightning_logs/version_0/checkpoints "
        "csv/lightning_logs/version_0")
    assert not (tmp_path / "fulmen" / "fulmen_logs").exists()
    for line in DEVICE_LINES:
        assert line in lightning.stderr and line in served.stderr, served.stderr
    assert not any(line in served.stderr for line in BANNER_LINES), served.stderr
    quiet = fulmen_run(tmp_path / "fulmen", LOOK, "quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert not any(line in quiet.stderr for line in DEVICE_LINES), quiet.stderr


def test_banner_and_fulmen_look_on_request(tmp_path: Path) -> None:
    """``FULMEN_BANNER=1`` adds fulmen's banner and its stop-notice line to Lightning's look;
    ``FULMEN_LOOK=fulmen`` keeps fulmen's own look (``fulmen_logs``, the banner, no device
    lines); a bad value is a usage error."""
    banner = fulmen_run(tmp_path, LOOK, env={"FULMEN_BANNER": "1"})
    assert "lightning_logs/version_0" in _dirs(banner)
    assert all(line in banner.stderr for line in BANNER_LINES + DEVICE_LINES), banner.stderr
    own = fulmen_run(tmp_path, LOOK, env={"FULMEN_LOOK": "fulmen"})
    assert _dirs(own) == ("DIRS fulmen_logs/version_0 fulmen_logs/version_0/checkpoints "
                          "csv/fulmen_logs/version_0")
    assert all(line in own.stderr for line in BANNER_LINES), own.stderr
    assert not any(line in own.stderr for line in DEVICE_LINES), own.stderr
    bad = fulmen_run(tmp_path, LOOK, env={"FULMEN_BANNER": "loud"})
    assert bad.returncode == 2
    assert "FULMEN_BANNER='loud': use 1 (show fulmen's run banner) or 0" in bad.stderr


ERRORS = """
import torch
import lightning as L
from lightning.fabric import Fabric
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.utilities.exceptions import MisconfigurationException

def attempt(label, call):
    try:
        call()
    except TypeError as exc:
        print("CAUGHT", label, "TypeError", "|", exc)
    except RuntimeError as exc:
        print("CAUGHT", label, "RuntimeError", "|", exc)
    except MisconfigurationException as exc:
        print("CAUGHT", label, "MisconfigurationException", "|", exc)
    else:
        print("CAUGHT", label, "nothing")

quiet = dict(logger=False, enable_progress_bar=False, enable_model_summary=False)
attempt("max_epochs", lambda: L.Trainer(max_epochs=-2))
attempt("checkpoint_mode", lambda: ModelCheckpoint(monitor="x", mode="bad"))
attempt("fit_nn_module", lambda: L.Trainer(**quiet).fit(torch.nn.Linear(2, 2)))
attempt("test_no_model", lambda: L.Trainer(**quiet).test())
fabric = Fabric(accelerator="cpu", devices=1)
attempt("launch_no_argument", lambda: fabric.launch(lambda: None))
attempt("setup_dataloaders", lambda: fabric.setup_dataloaders([1, 2]))
ddp = Fabric(accelerator="cpu", strategy="ddp", devices=2)
attempt("before_launch", lambda: ddp.setup_dataloaders(torch.utils.data.DataLoader([1, 2])))
"""


def _caught(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str]]:
    assert done.returncode == 0, done.stderr
    return {line.split()[1]: (line.split()[2], line.partition(" | ")[2])
            for line in done.stdout.splitlines() if line.startswith("CAUGHT")}


def test_errors_have_lightnings_types_and_names(tmp_path: Path) -> None:
    """What a Lightning script catches around a mistake catches fulmen's error for it:
    ``MisconfigurationException`` (fulmen's ConfigurationError), ``TypeError`` where Lightning
    raises one (a ``torch.nn.Module`` given to ``fit``, a ``launch`` function without
    arguments), ``RuntimeError`` for Fabric's call-order mistakes (a method before
    ``launch``); and the messages name
    ``LightningModule``, ``Fabric`` and ``fabric.<method>``, never fulmen's classes."""
    (tmp_path / "lightning").mkdir()
    (tmp_path / "fulmen").mkdir()
    lightning = _caught(lightning_run(tmp_path / "lightning", ERRORS))
    served = _caught(fulmen_run(tmp_path / "fulmen", ERRORS))
    assert {k: kind for k, (kind, _) in served.items()} == \
        {k: kind for k, (kind, _) in lightning.items()}
    assert set(served) == {"max_epochs", "checkpoint_mode", "fit_nn_module", "test_no_model",
                           "launch_no_argument", "setup_dataloaders", "before_launch"}
    messages = " ".join(message for _, message in served.values())
    assert "LightningModule" in served["fit_nn_module"][1]
    assert "fabric.launch(" in served["launch_no_argument"][1]
    assert not any(name in messages for name in ("fulmen.Module", "fulmen.Lite", " Lite",
                                                 "lite.")), messages
