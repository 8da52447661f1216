"""The ecosystem slices: each library's version, where its tests come from, and how to run them.

The test ids (pytest node ids, relative to the slice's working directory) are those that passed
on real Lightning 2.6.6 in the same venv; they live in lightning_passing.json, written by
``python tests/ecosystem/libraries.py --record LIB LIGHTNING.xml`` from a Lightning run's junit
xml. The test files themselves are the libraries' own, unmodified, and never committed here:
fetch_tests.py takes them from what PyPI publishes (:attr:`Library.pypi`). Where PyPI ships no
usable tests (neither the wheel nor the sdist), the slice runs only for a developer who puts a
checkout of the repository (:attr:`Library.repository`) at ``suites_dir()/NAME``; CI cannot.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PASSING = HERE / "lightning_passing.json"


def eco_dir() -> Path:
    """Where build_env.sh puts the venvs and the unpacked suites (FULMEN_ECO_DIR)."""
    return Path(os.environ.get("FULMEN_ECO_DIR",
                               Path.home() / ".cache" / "fulmen-ecosystem")).expanduser()


def suites_dir(root: Path | None = None) -> Path:
    """Where each library's test files lie, one folder per library: FULMEN_ECO_SUITES, else
    ``suites/`` in the ecosystem directory ``root`` (:func:`eco_dir`)."""
    default = (root or eco_dir()) / "suites"
    return Path(os.environ.get("FULMEN_ECO_SUITES", default)).expanduser()


@dataclass(frozen=True)
class Library:
    name: str
    version: str  #: the PyPI release installed (pip install NAME==VERSION)
    module: str  #: its import name
    repository: str  #: the git repository and tag the slice was measured from
    #: what PyPI publishes of the slice's test files: "sdist" (fetch_tests.py extracts its tests/
    #: and pyproject.toml) or, when it cannot run from PyPI, why not
    pypi: str
    #: the slice: pytest's arguments (files and -k), relative to :meth:`cwd`. Whole files, not
    #: node ids: a node id in a module that fails to import under fulmen would stop pytest
    #: before any test ran ("not found"), where a file only reports its collection error.
    args: tuple[str, ...] = ()
    venv: str = "venv"  #: litgpt pins jsonargparse<=4.41 (fulmen-core wants >=4.49): own venv
    in_package: bool = False  #: darts' tests import darts.tests: copied into the installed package
    env: dict[str, str] = field(default_factory=dict)

    def python(self, root: Path) -> Path:
        return root / self.venv / "bin" / "python"

    def cwd(self, root: Path) -> Path:
        if self.in_package:
            found = sorted((root / self.venv / "lib").glob("python3*/site-packages"))
            return found[0] if found else root / self.venv / "lib" / "site-packages"
        return suites_dir(root) / self.name

    @property
    def on_pypi(self) -> bool:
        """Whether fetch_tests.py can get the slice's test files from PyPI (CI can run it)."""
        return self.pypi == "sdist"

    @property
    def tests(self) -> list[str]:
        return json.loads(PASSING.read_text()).get(self.name, [])

    def failures(self, report: Path, log: str, tests: list[str] | None = None) -> dict[str, str]:
        """Each of ``tests`` (default :attr:`tests`) that did not pass in junit ``report``, with
        the first error line (the log's first ``E`` line when pytest wrote no report)."""
        tests = self.tests if tests is None else tests
        if not report.exists():
            first = next((ln[4:].strip() for ln in log.splitlines() if ln.startswith("E   ")),
                         log.strip().splitlines()[-1] if log.strip() else "no output")
            return dict.fromkeys(tests, first)
        seen = outcomes(report)
        failed = {}
        for test in tests:
            state, why = seen.get(test) or seen.get(test.partition("::")[0], ("missing", ""))
            if state != "passed":
                failed[test] = why or state
        return failed


def node_id(classname: str, name: str) -> str:
    """pytest's node id from junit's (classname, name): ``a.b.test_x.C`` -> ``a/b/test_x.py::C``."""
    if not classname:  # a module that failed to collect
        return name.replace(".", "/") + ".py"
    parts = classname.split(".")
    at = max(i for i, p in enumerate(parts) if p.startswith("test"))
    at = next((i for i, p in enumerate(parts) if p.startswith("test_") or p.endswith("_test")),
              at)
    path = "/".join(parts[: at + 1]) + ".py"
    return "::".join([path, *parts[at + 1:], name])


def outcomes(report: Path) -> dict[str, tuple[str, str]]:
    """node id -> (passed|failed|skipped, first error line) from a junit xml."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).iter("testcase"):
        state, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                state = "failed"
                text = (child.text or "") + "\n" + (child.get("message") or "")
                lines = [ln[4:].strip() for ln in text.splitlines() if ln.startswith("E   ")]
                why = (lines or [(child.get("message") or "failed").splitlines()[0]])[0][:300]
            elif child.tag == "skipped":
                state = "skipped"
        found[node_id(case.get("classname", ""), case.get("name", ""))] = (state, why)
    return found


NOT_SHIPPED = "neither the PyPI wheel nor the sdist ships its tests"
PARTIAL = ("the PyPI sdist ships tests/test_*.py but not tests/conftest.py and the helpers "
           "they import, so the slice does not run from it")

LIBRARIES = [
    Library("darts", "0.46.1", "darts", "github.com/unit8co/darts tag 0.46.1 (c2ff4939)",
            NOT_SHIPPED,
            ("darts/tests/models/forecasting/test_ptl_trainer.py",
             "darts/tests/models/forecasting/test_torch_forecasting_model.py",
             "-k", "not test_weights and not test_output_shift and not test_multi_ts_prediction"
             " and not test_save_and_load_weights_covs_usage_attributes and not test_val_set"
             " and not test_rin"), in_package=True),
    Library("neuralforecast", "3.3.0", "neuralforecast",
            "github.com/Nixtla/neuralforecast 5ffa0d08 (tests/ of the 3.3.0 sdist with that "
            "commit's tests/conftest.py and tests/helpers)", PARTIAL,
            ("tests/test_core.py", "-k", "early_stopping or val_monitor or test_save_load or "
             "checkpointing or optimizer_kwargs or lr_scheduler_kwargs or trainer_caching or "
             "inplace_model_fitting or test_neural_forecast_refit")),
    Library("scvi-tools", "1.4.2", "scvi", "github.com/scverse/scvi-tools tag 1.4.2 (dc95497c)",
            "sdist",
            ("tests/train", "tests/model/test_linear_scvi.py", "tests/model/test_amortizedlda.py")),
    Library("chemprop", "2.3.1", "chemprop", "github.com/chemprop/chemprop tag v2.3.1 (9a0b47ad)",
            NOT_SHIPPED, ("tests/integration", "-k", "quick")),
    Library("nequip", "0.19.0", "nequip", "github.com/mir-group/nequip tag v0.19.0 (ea3ac141)",
            NOT_SHIPPED,
            ("tests/integration/test_state_restoration.py", "tests/integration/test_train.py",
             "-k", "toy_emt and float64 and fresh and not test_restarts")),
    Library("litgpt", "0.5.13", "litgpt", "github.com/Lightning-AI/litgpt tag v0.5.13 (26857050)",
            PARTIAL,
            ("tests/test_full.py", "tests/test_pretrain.py", "tests/test_merge_lora.py",
             "tests/test_api.py", "tests/generate/test_main.py", "tests/test_chat.py",
             "tests/test_trainer_support.py", "tests/test_utils.py", "tests/test_lora.py",
             "tests/test_adapter.py", "tests/test_adapter_v2.py", "-k",
             "not nvlink and (not test_lora.py and not test_adapter or script or filter or "
             "fsdp_init or parallelize or legacy or layer_replacement or test_lora_merge or mqa)"),
            venv="venv-litgpt"),
]

#: ``make test``'s slice (CI): node ids of a library whose tests PyPI ships, a few seconds each on
#: CPU, passing on Lightning 2.6.6 and under ``fulmen run``. They fit a model through Lightning's
#: Trainer with the library's own TrainingPlan, callbacks (exception handling, ModelCheckpoint,
#: a metrics callback) and LightningDataModule-based loaders, and reload what they saved.
QUICK = {
    "scvi-tools": [
        "tests/train/test_callbacks.py::test_exception_callback[SCVI]",
        "tests/train/test_callbacks.py::test_lightning_checkpoint[SCVI]",
        "tests/train/test_callbacks.py::test_scib_callback_adata[SCVI-Total]",
        "tests/train/test_trainingplans.py::test_loss_args",
        "tests/model/test_linear_scvi.py::test_linear_scvi",
        "tests/model/test_linear_scvi.py::test_linear_scvi_use_observed_lib_size",
        "tests/model/test_amortizedlda.py::test_lda_model[5]",
        "tests/model/test_amortizedlda.py::test_lda_model_single_step[5]",
        "tests/model/test_amortizedlda.py::test_lda_model_save_load[5]",
        "tests/model/test_linear_scvi.py::test_linear_scvi_with_minification",
    ],
}


def _record(name: str, xml: str) -> None:
    passing = json.loads(PASSING.read_text()) if PASSING.exists() else {}
    passing[name] = sorted(k for k, (state, _) in outcomes(Path(xml)).items()
                           if state == "passed")
    PASSING.write_text(json.dumps(passing, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {len(passing[name])} ids recorded")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--record"]:
        _record(sys.argv[2], sys.argv[3])
    else:
        for lib in LIBRARIES:
            print(lib.name, lib.version, lib.cwd(eco_dir()), len(lib.tests), "tests")
