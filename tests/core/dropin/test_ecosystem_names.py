"""Names and behaviours that libraries built on Lightning (darts, neuralforecast, scvi-tools,
chemprop, nequip, litgpt) rely on, run as one script on the installed Lightning and under
``fulmen run``; the observations must match.

Covers: the public and private Lightning names these libraries import (e.g. scvi-tools'
``_AcceleratorConnector``, litgpt's ``_lazy_load`` / ``_runif_reasons`` / ``_FabricOptimizer``,
nequip's ``AcceleratorRegistry`` / ``_register_classes`` / ``device_parser`` helpers); a
submodule reached by attribute; an ``AttributeDict`` pickled by Lightning unpickling; Fabric's
``CSVLogger`` / ``TensorBoardLogger(root_dir=...)`` layout and ``Fabric(precision=None)``;
private names and modules that do not exist are import errors naming them; tracker loggers
import without fulmen's plugin. Ported in spirit from Lightning's
tests/tests_fabric/utilities/test_device_parser.py, test_load.py (``test_lazy_load_*``) and
tests_fabric/loggers/test_csv.py / test_tensorboard.py (``log_dir`` layout). Deliberate
differences: the connector's class is fulmen's (``type(...).__name__`` differs, not compared).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = r'''
import json, os, pickle, sys, tempfile, warnings
warnings.simplefilter("ignore")
import torch
out = {}
names = [
    ("lightning.pytorch.utilities.warnings", "PossibleUserWarning"),
    ("lightning.pytorch.loggers.logger", "rank_zero_experiment"),
    ("lightning.pytorch.loggers.logger", "DummyLogger"),
    ("lightning.pytorch.core.mixins", "HyperparametersMixin"),
    ("lightning.fabric.plugins", "BitsandbytesPrecision"),
    ("lightning.pytorch.cli", "instantiate_class"),
    ("lightning.fabric.utilities.load", "_lazy_load"),
    ("lightning.fabric.utilities.load", "_NotYetLoadedTensor"),
    ("lightning.fabric.utilities.testing", "_runif_reasons"),
    ("lightning.fabric.wrappers", "_FabricOptimizer"),
    ("lightning.pytorch.accelerators", "AcceleratorRegistry"),
    ("lightning.pytorch.accelerators", "XLAAccelerator"),
    ("lightning.pytorch.core.optimizer", "LightningOptimizer"),
    ("lightning.pytorch.strategies.single_xla", "SingleDeviceXLAStrategy"),
    ("lightning.fabric.utilities.registry", "_register_classes"),
    ("lightning.fabric.utilities.device_parser", "_check_data_type"),
    ("lightning.fabric.utilities.distributed", "_distributed_is_initialized"),
    ("lightning.fabric.utilities.imports", "_IS_WINDOWS"),
    ("lightning.fabric.utilities.imports", "_TORCH_GREATER_EQUAL_2_3"),
    ("lightning.fabric.utilities.init", "_materialize_meta_tensors"),
    ("lightning.fabric.plugins.precision.bitsandbytes", "_BITSANDBYTES_AVAILABLE"),
    ("lightning.pytorch.callbacks.progress.tqdm_progress", "Tqdm"),
    ("lightning.pytorch.utilities.parsing", "AttributeDict"),
    ("lightning.pytorch.trainer.connectors.accelerator_connector", "_AcceleratorConnector"),
    ("lightning.pytorch.trainer.connectors.accelerator_connector", "_IS_INTERACTIVE"),
    ("lightning.pytorch.trainer.setup", "_log_device_info"),
    ("pytorch_lightning.tuner.lr_finder", "_LRFinder"),
    ("pytorch_lightning.utilities.warnings", "PossibleUserWarning"),
]
import importlib
resolved = {}
for module, name in names:
    try:
        getattr(importlib.import_module(module), name)
        resolved[f"{module}:{name}"] = "ok"
    except Exception as exc:
        resolved[f"{module}:{name}"] = type(exc).__name__
out["names"] = resolved

# flags answer for this environment
from lightning.fabric.utilities.imports import _IS_WINDOWS, _TORCH_GREATER_EQUAL_2_3
from lightning.fabric.plugins.precision.bitsandbytes import _BITSANDBYTES_AVAILABLE
out["flags"] = [bool(_IS_WINDOWS), bool(_TORCH_GREATER_EQUAL_2_3), bool(_BITSANDBYTES_AVAILABLE)]

# C2: a submodule reached by attribute, as import does
import lightning.pytorch as pl
from lightning.pytorch.callbacks.early_stopping import EarlyStopping
out["attribute_submodule"] = [pl.callbacks.early_stopping.EarlyStopping is EarlyStopping,
                              pl.loggers.logger.DummyLogger.__name__,
                              isinstance(pl.__version__, str)]

# C3: unknown private names and modules are import errors naming them
errors = []
for code in ("from lightning.pytorch.trainer.connectors.accelerator_connector import _Nope",
             "import lightning.pytorch.callbacks._nope",
             "from lightning.pytorch.callbacks import _nope",
             "import lightning.pytorch.trainer.connectors._nope"):
    try:
        exec(code, {})
        errors.append("imported")
    except ImportError as exc:
        errors.append(["ImportError", "_nope" in str(exc).lower() or "_Nope" in str(exc)])
out["unknown_private"] = errors

# scvi-tools' parse_device_args
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector
flags = []
for accelerator, devices in (("cpu", 1), ("auto", "auto"), ("cpu", 2), ("cpu", "auto"),
                             ("cpu", "3")):
    c = _AcceleratorConnector(accelerator=accelerator, devices=devices)
    flags.append([c._accelerator_flag, c._devices_flag, [str(d) for d in c._parallel_devices],
                  type(c.strategy).__name__])
out["connector"] = flags

# nequip's XPU accelerator parses devices with these
from lightning.fabric.utilities import device_parser as dp
parsed = [dp._normalize_parse_gpu_string_input(s) for s in ("-1", "0,1", " 2 ", 3, [1])]
bad = []
for given in (None, 1.5, [True], (0, "1")):
    try:
        dp._check_data_type(given)
        bad.append("passed")
    except TypeError as exc:
        bad.append(str(exc))
try:
    dp._check_unique([0, 0])
except Exception as exc:
    bad.append(str(exc))
out["device_parser"] = [parsed, bad, dp._parse_gpu_ids(0, include_cuda=True),
                        dp._parse_gpu_ids("[]", include_cuda=True)]

# nequip registers its accelerator through these
from lightning.pytorch.accelerators import Accelerator, AcceleratorRegistry
from lightning.fabric.utilities.registry import _register_classes
import types
class NequipLikeAccelerator(Accelerator):
    @classmethod
    def register_accelerators(cls, registry):
        registry.register("nequip_like", cls, description="test")
holder = types.ModuleType("holder"); holder.NequipLikeAccelerator = NequipLikeAccelerator
_register_classes(AcceleratorRegistry, "register_accelerators", holder, Accelerator)
out["registry"] = ["nequip_like" in AcceleratorRegistry, "cpu" in AcceleratorRegistry]

# litgpt: lazy loading of checkpoints
from lightning.fabric.utilities.load import _lazy_load, _NotYetLoadedTensor
d = tempfile.mkdtemp()
path = os.path.join(d, "ckpt.pt")
torch.manual_seed(0)
state = {"w": torch.randn(3, 4), "p": torch.nn.Parameter(torch.arange(6.0).view(2, 3)),
         "n": 7, "half": torch.ones(2, dtype=torch.float16)}
torch.save(state, path)
lazy = _lazy_load(path)
out["lazy"] = [type(lazy["w"]) is _NotYetLoadedTensor, list(lazy["w"].shape),
               str(lazy["half"].dtype),
               lazy["n"], torch.equal(lazy["w"].to(torch.float32), state["w"]),
               torch.equal(torch.add(lazy["p"], 0), state["p"].detach()),
               type(lazy["p"]._load_tensor()).__name__]

# litgpt's RunIf
from lightning.fabric.utilities.testing import _runif_reasons
out["runif"] = [_runif_reasons(min_torch="1.0"), _runif_reasons(max_torch="1.0")[0] != [],
                _runif_reasons(standalone=True, min_cuda_gpus=99)[1]]

# litgpt: materialize meta tensors
from lightning.fabric.utilities.init import _materialize_meta_tensors
with torch.device("meta"):
    layer = torch.nn.Linear(2, 3)
_materialize_meta_tensors(layer, torch.device("cpu"))
out["materialize"] = [layer.weight.device.type, layer.weight.is_meta]

# an AttributeDict pickled by Lightning
with open(sys.argv[1], "rb") as f:
    loaded = pickle.load(f)
out["attribute_dict"] = [dict(loaded), loaded.lr, type(loaded).__name__]

# Fabric's loggers and precision=None
from lightning.fabric import Fabric
from lightning.fabric.loggers import CSVLogger, TensorBoardLogger
root = tempfile.mkdtemp()
csv, tb = CSVLogger(root_dir=root), TensorBoardLogger(root_dir=root, name="tb", sub_dir="s")
csv.log_metrics({"a": 1.0}); csv.finalize("success")
out["fabric_loggers"] = [os.path.relpath(csv.log_dir, root), csv.root_dir == root, csv.name,
                         os.path.relpath(tb.log_dir, root), tb.root_dir == root,
                         os.path.isfile(os.path.join(csv.log_dir, "metrics.csv")),
                         os.path.relpath(CSVLogger(root, name=None, version="v").log_dir, root)]
fabric = Fabric(accelerator="cpu", devices=1, precision=None)
out["fabric_precision"] = str(fabric.device)
print("OBSERVED " + json.dumps(out, sort_keys=True))
'''

PICKLE = r'''
import pickle, sys
from lightning.fabric.utilities.data import AttributeDict
with open(sys.argv[1], "wb") as f:
    pickle.dump(AttributeDict(lr=0.1, layers=[2, 3]), f)
'''

TRACKERS = r'''
from lightning.pytorch.loggers import CometLogger, MLFlowLogger, WandbLogger
from lightning.pytorch.loggers.wandb import WandbLogger as FromModule
from lightning.pytorch.loggers import Logger
assert FromModule is WandbLogger and issubclass(WandbLogger, Logger)
for cls, package in ((WandbLogger, "wandb"), (MLFlowLogger, "mlflow"), (CometLogger, "comet")):
    try:
        cls()
    except ModuleNotFoundError as exc:
        assert f"fulmen[{package}]" in str(exc) and cls.__name__ in str(exc), exc
        print("REFUSED", cls.__name__)
'''


def _env(**extra: str) -> dict[str, str]:
    from fulmen.dropin.run import BOOT, ENV

    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(BOOT))
    return {**env, "OMP_NUM_THREADS": "1", **extra}


def _observe(tmp_path: Path, under_fulmen: bool, pickled: Path) -> dict[str, object]:
    script = tmp_path / "observe.py"
    script.write_text(SCRIPT)
    command = [sys.executable, *(["-m", "fulmen", "run"] if under_fulmen else []), str(script),
               str(pickled)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=_env())
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("OBSERVED "))
    observed: dict[str, object] = json.loads(line.removeprefix("OBSERVED "))
    return observed


def _has_lightning() -> bool:
    return subprocess.run([sys.executable, "-c", "import lightning"], env=_env(),
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not _has_lightning(), reason="needs the real Lightning to compare with")
def test_library_names_and_behaviours_match_lightning(tmp_path: Path) -> None:
    pickled = tmp_path / "attribute_dict.pkl"
    writer = tmp_path / "write.py"
    writer.write_text(PICKLE)
    subprocess.run([sys.executable, str(writer), str(pickled)], check=True, timeout=120,
                   env=_env())
    real = _observe(tmp_path, False, pickled)
    ours = _observe(tmp_path, True, pickled)
    assert all(v == "ok" for v in real["names"].values()), real["names"]  # type: ignore[union-attr]
    for key in sorted(real):
        assert ours[key] == real[key], f"{key}: fulmen {ours[key]!r} != Lightning {real[key]!r}"


def test_tracker_loggers_import_without_their_plugin(tmp_path: Path) -> None:
    script = tmp_path / "trackers.py"
    script.write_text(textwrap.dedent(TRACKERS))
    done = subprocess.run([sys.executable, "-m", "fulmen", "run", str(script)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=_env(FULMEN_DISABLE_PLUGINS="wandb,mlflow,comet"))
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.count("REFUSED") == 3, done.stdout
