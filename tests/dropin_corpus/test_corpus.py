"""Published Lightning and Fabric scripts (Lightning's own examples, copied with only imports,
offline data and sizes changed; each names its source and commit in its header) run three ways
and must print the same final numbers, bit for bit:

1. on the real Lightning (``pip install lightning``, plain ``python``);
2. unmodified through ``fulmen run`` (Lightning's names served by fulmen);
3. after ``fulmen migrate`` (imports rewritten to fulmen), under plain ``python``.

Each script ends with ``report(...)`` (scripts/corpus_report.py): the step, epoch, callback
metrics as ``float.hex`` and a digest of the weights' bytes. Where a script takes the settings,
it also runs with ``strategy="ddp", devices=2`` on the CPU: a Trainer script through its own
command line, a Fabric script the way ``fabric run --strategy ddp --devices 2`` starts it
(``torchrun`` with the ``LT_*`` variables). The table in docs/migrating.md is this file's result.

The whole corpus is ``slow`` (it re-runs Lightning and checks its numbers against
lightning_reference.json, the record of them); ``QUICK`` cases (a Trainer, a Fabric, a
manual-optimization GAN and two DDP runs) are in ``make test``, compared with the record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import offline_data
import pytest

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
REFERENCE = HERE / "lightning_reference.json"  # Lightning's numbers, per case (see _compare)
TIMEOUT = 240  # seconds, per process tree (every run below has one)
DDP_TRAINER = ("--trainer.accelerator=cpu", "--trainer.strategy=ddp", "--trainer.devices=2")
FABRIC_DDP = {"LT_CLI_USED": "1", "LT_ACCELERATOR": "cpu", "LT_STRATEGY": "ddp",
              "LT_DEVICES": "2", "LT_NUM_NODES": "1"}


@dataclass(frozen=True)
class Script:
    name: str
    args: tuple[str, ...] = ()
    #: extra arguments for strategy="ddp", devices=2 (None: the script does not take them)
    ddp: tuple[str, ...] | None = None
    #: a Fabric script: DDP is started as `fabric run` starts it (torchrun + LT_* variables)
    fabric: bool = False


CLI_FAST = ("--trainer.max_epochs=2", "--trainer.limit_train_batches=8",
            "--trainer.limit_val_batches=2", "--trainer.limit_test_batches=2",
            "--trainer.limit_predict_batches=1", "--trainer.enable_progress_bar=false")

CORPUS = {s.name: s for s in [
    Script("pt_bug_report"),
    Script("pt_datamodule_tutorial", (), ("--strategy", "ddp", "--devices", "2")),
    Script("pt_autoencoder", CLI_FAST, DDP_TRAINER),
    Script("pt_backbone_classifier", CLI_FAST, DDP_TRAINER),
    Script("pt_transformer", (), ("--strategy", "ddp", "--devices", "2")),
    Script("pt_finetuning", ("fit", "--trainer.max_epochs=4", "--finetuning.milestones=[1,2]",
                             "--data.batch_size=8", "--trainer.limit_train_batches=4",
                             "--trainer.limit_val_batches=2",
                             "--trainer.enable_progress_bar=false"), DDP_TRAINER),
    Script("pt_gan"),
    Script("pt_dqn"),
    Script("pt_ppo", ("--steps_per_epoch", "256", "--batch_size", "64")),
    Script("fabric_image_classifier", ("--epochs", "2", "--batch-size", "50"), (), fabric=True),
    Script("fabric_kfold_cv", ("--epochs", "1", "--folds", "3", "--batch-size", "100"), (),
           fabric=True),
    Script("fabric_dcgan"),  # Fabric(devices=1) in the script: no DDP run
    Script("fabric_language_model"),
    # two processes of their own (tensor_parallel_size=2 on the CPU)
    Script("fabric_tensor_parallel/train"),
    Script("pytorch_tensor_parallel/train"),
]}
#: in `make test` too: a Trainer script, a Fabric script, the manual-optimization GAN, and DDP
#: (the transformer's dropout: every rank re-seeded at set-up, as Lightning's DDPStrategy)
QUICK = {("pt_bug_report", False), ("fabric_dcgan", False), ("pt_gan", False),
         ("pt_datamodule_tutorial", True), ("pt_transformer", True)}
#: known differences (script, ddp) -> why; the test expects them to differ (strict xfail)
DIFFERENT: dict[tuple[str, bool], str] = {}  # none today


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    from fulmen.dropin.run import BOOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LT_", "PL_", "FULMEN_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                         "PYTHONPATH")}
    # the sources under test stay first (a checkout beside the installed one); fulmen run's
    # boot folder never leaks into the Lightning runs
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and Path(p).resolve() != BOOT]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(offline_data.ENV, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0", **(extra or {}))
    return env


def _workdir(root: Path) -> Path:
    """A copy of the scripts in ``root/scripts``, the offline data in ``root``."""
    shutil.copytree(SCRIPTS, root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    offline_data.write(root)
    return root / "scripts"


def run(script: Script, ddp: bool, how: str, root: Path) -> dict[str, dict[str, object]]:
    """Run ``script`` ``how`` ("lightning", "fulmen run", "migrated") in ``root``; its report
    lines, by rank."""
    folder = _workdir(root)
    if how == "migrated":
        done = subprocess.run([sys.executable, "-m", "fulmen", "migrate", str(folder)],
                              capture_output=True, text=True, timeout=TIMEOUT, env=_env())
        assert done.returncode == 0, done.stdout + done.stderr
    path = str(folder / f"{script.name}.py")
    args = [*script.args, *((script.ddp or ()) if ddp else ())]
    target = ["-m", "fulmen", "run", path] if how == "fulmen run" else [path]
    extra: dict[str, str] = {}
    if ddp and script.fabric:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node", "2", *target, *args]
        extra = FABRIC_DDP
    else:
        command = [sys.executable, *target, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, cwd=root,
                          env=_env(extra))
    assert done.returncode == 0, \
        f"{how} {script.name}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    reports: dict[str, dict[str, object]] = {}
    for rank, payload in re.findall(r"CORPUS (\d+) (\{[^{}]*\})", done.stdout):
        if True:
            reports.setdefault(rank, {}).update(
                {f"{k}#{len(reports.get(rank, {}))}" if k in reports.get(rank, {}) else k: v
                 for k, v in json.loads(payload).items()})
    assert reports, f"{how} {script.name} printed no report:\n{done.stdout[-3000:]}"
    if ddp:
        assert set(reports) == {"0", "1"}, reports
    return reports


def case_id(name: str, ddp: bool) -> str:
    return f"{name.replace('/', '-')}-{'ddp2' if ddp else 'single'}"


def _recorded() -> dict[str, dict[str, dict[str, object]]]:
    return json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}


def _compare(name: str, ddp: bool, tmp_path: Path, *, lightning: bool,
             hows: tuple[str, ...] = ("fulmen run", "migrated")) -> None:
    """fulmen's runs ``hows`` against Lightning's numbers: run now (``lightning=True``, and
    checked against the recorded ones) or as recorded in lightning_reference.json."""
    script, key = CORPUS[name], case_id(name, ddp)
    if lightning:
        reference = run(script, ddp, "lightning", tmp_path / "lightning")
        if os.environ.get("CORPUS_RECORD") == "1":
            REFERENCE.write_text(json.dumps({**_recorded(), key: reference}, indent=1,
                                            sort_keys=True) + "\n")
        assert _recorded().get(key) == reference, (
            f"{key}: Lightning's numbers differ from lightning_reference.json (a new Lightning "
            "or torch?): CORPUS_RECORD=1 pytest -m slow tests/dropin_corpus records them")
    else:
        reference = _recorded()[key]
    for how in hows:
        got = run(script, ddp, how, tmp_path / how.replace(" ", "_"))
        assert got == reference, f"{key} {how}: {json.dumps(got, indent=1)}\n" \
            f"!= lightning:\n{json.dumps(reference, indent=1)}"


def _cases(quick: bool) -> list[object]:
    cases = []
    for name, script in CORPUS.items():
        for ddp in (False, True) if script.ddp is not None else (False,):
            if quick and (name, ddp) not in QUICK:
                continue
            marks = [pytest.mark.timeout(4 * TIMEOUT)]
            if not quick:
                marks.append(pytest.mark.slow)
            if (name, ddp) in DIFFERENT:
                marks.append(pytest.mark.xfail(reason=DIFFERENT[name, ddp], strict=True))
            cases.append(pytest.param(name, ddp, marks=marks, id=case_id(name, ddp)))
    return cases


@pytest.mark.parametrize(("name", "ddp"), _cases(quick=True))
def test_quick_corpus(name: str, ddp: bool, tmp_path: Path) -> None:
    """Against the recorded Lightning numbers, through ``fulmen run``, and the GAN also after
    ``fulmen migrate`` (the slow test re-runs Lightning and migrates every case)."""
    _compare(name, ddp, tmp_path, lightning=False,
             hows=("fulmen run", "migrated") if name == "pt_gan" else ("fulmen run",))


@pytest.mark.parametrize(("name", "ddp"), _cases(quick=False))
def test_corpus(name: str, ddp: bool, tmp_path: Path) -> None:
    _compare(name, ddp, tmp_path, lightning=True)


def test_installed_lightning_is_left_to_other_programs(tmp_path: Path) -> None:
    """With the real Lightning installed, ``fulmen run`` still serves fulmen, and a program
    started without it (even beside the boot folder) gets the real package."""
    from fulmen.dropin.run import BOOT

    probe = ("import lightning.pytorch as pl, pytorch_lightning, lightning_fabric\n"
             "print(type(pl.Trainer).__module__, pl.Trainer.__module__, "
             "pytorch_lightning.__version__)\n")
    (tmp_path / "probe.py").write_text(probe)
    served = subprocess.run([sys.executable, "-m", "fulmen", "run", "probe.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=_env())
    assert served.returncode == 0, served.stderr
    assert served.stdout.split()[1].startswith("fulmen."), served.stdout
    real = subprocess.run([sys.executable, "probe.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**_env(), "PYTHONPATH": str(BOOT)})
    assert real.returncode == 0, real.stderr
    assert real.stdout.split()[1].startswith("lightning.pytorch."), real.stdout
    assert real.stdout.split()[2].startswith("2.6."), real.stdout
