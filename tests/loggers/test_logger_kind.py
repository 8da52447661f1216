"""The logger plugin kind: names, lists, errors, the CLI, the dispatch rules of the logger
contract (``LoggerSet``), and a third-party logger installed as a package, selected by name and
held to the conformance kit."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import torch
from tiny_models import TinyModule, loader

import fulmen
from fulmen import ConfigurationError
from fulmen.api.logger import CheckpointArtifacts, Logger, NoOpExperiment, artifact_name
from fulmen.errors import LoggerWarning
from fulmen.kernel.catalog import Catalog
from fulmen.loggers import CSVLogger, TensorBoardLogger
from fulmen.loggers.dispatch import LoggerSet

FLAGS = {"accelerator": "cpu", "devices": 1, "max_steps": 4, "enable_progress_bar": False,
         "enable_model_summary": False, "enable_checkpointing": False, "log_every_n_steps": 1}


class Recorder(Logger):
    """Records every call (no files)."""

    def __init__(self, fail_in: str = "", raise_on_error: bool = False) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail_in, self.raise_on_error = fail_in, raise_on_error

    def _note(self, what: str, value: Any) -> None:
        self.calls.append((what, value))
        if what == self.fail_in:
            raise ConnectionError("tracker down")

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self._note("log_metrics", (dict(metrics), step))

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        self._note("log_hyperparams", params)

    def finalize(self, status: str) -> None:
        self._note("finalize", status)

    def named(self, what: str) -> list[Any]:
        return [v for w, v in self.calls if w == what]


# ------------------------------------------------------------------ names and lists


def test_every_tracker_is_listed_with_its_distribution():
    from fulmen.cli import main

    catalog = fulmen.get_plugin_manager().catalog()
    by_name = {e.name: e.plugin.distribution for e in catalog.entries("logger")}
    assert by_name == {"csv": "fulmen-core", "tensorboard": "fulmen-core",
                       "wandb": "fulmen-wandb", "mlflow": "fulmen-mlflow",
                       "comet": "fulmen-comet"}
    assert catalog.find("logger", "tb").name == "tensorboard"
    assert main(["plugins"]) == 0


def test_names_instances_and_lists_select_loggers(tmp_path):
    trainer = fulmen.Trainer(logger="csv", default_root_dir=str(tmp_path), **FLAGS)
    assert isinstance(trainer.logger, CSVLogger) and trainer.logger.save_dir == str(tmp_path)
    mine = CSVLogger(tmp_path / "mine")
    trainer = fulmen.Trainer(logger=["tb", mine], default_root_dir=str(tmp_path), **FLAGS)
    assert isinstance(trainer.loggers[0], TensorBoardLogger) and trainer.loggers[1] is mine
    lite = fulmen.Lite(accelerator="cpu", devices=1, loggers="csv")
    assert isinstance(lite.logger, CSVLogger)


def test_a_mapping_with_a_class_path_or_a_name_and_init_args(tmp_path):
    trainer = fulmen.Trainer(logger={"class_path": "csv", "init_args": {"name": "by_name"}},
                             default_root_dir=str(tmp_path), **FLAGS)
    assert trainer.logger.name == "by_name" and trainer.logger.save_dir == str(tmp_path)
    trainer = fulmen.Trainer(logger={"class_path": "fulmen.loggers.CSVLogger",
                                     "init_args": {"save_dir": str(tmp_path), "name": "cls"}},
                             **FLAGS)
    assert isinstance(trainer.logger, CSVLogger) and trainer.logger.name == "cls"


def test_unknown_and_unavailable_names_say_what_would_work(monkeypatch):
    with pytest.raises(ConfigurationError, match=r"logger='wanbd' is not a registered logger "
                       r"name. Did you mean 'wandb'\? Available loggers: .*'mlflow'"):
        fulmen.Trainer(logger="wanbd", **FLAGS)
    with pytest.raises(ConfigurationError, match=r"logger=3 \(int\); use True, False, a "):
        fulmen.Trainer(logger=3, **FLAGS)
    with pytest.raises(ConfigurationError, match=r"'csv'.*\{'bad': 1\}.*unexpected keyword"):
        fulmen.Trainer(logger={"class_path": "csv", "init_args": {"bad": 1}}, **FLAGS)
    # Without the distribution, the name says which extra installs it.
    empty = Catalog({}, {})
    message = str(empty.unknown("logger", "mlflow", "Trainer(logger=...)"))
    assert "'fulmen-mlflow' distribution (pip install 'fulmen[mlflow]')" in message
    # A disabled plugin says so.
    monkeypatch.setenv("FULMEN_DISABLE_PLUGINS", "comet")
    fulmen.reload_plugins()
    try:
        with pytest.raises(ConfigurationError, match=r"comet.*disabled"):
            fulmen.Trainer(logger="comet", **FLAGS)
    finally:
        monkeypatch.delenv("FULMEN_DISABLE_PLUGINS")
        fulmen.reload_plugins()


def test_listing_and_importing_the_trackers_imports_no_tracker_library():
    code = textwrap.dedent("""
        import sys
        import fulmen
        fulmen.get_plugin_manager().catalog()
        import fulmen_wandb, fulmen_mlflow, fulmen_comet
        from fulmen.loggers import WandbLogger, MLFlowLogger, CometLogger
        WandbLogger(offline=True); MLFlowLogger(); CometLogger(online=False)
        print(sorted(m for m in ("wandb", "mlflow", "comet_ml") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"  # imported when the run is made, on rank zero


def test_cli_selects_a_logger_by_name_and_by_class_path(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(textwrap.dedent(f"""
        trainer:
          max_steps: 2
          accelerator: cpu
          log_every_n_steps: 1
          enable_progress_bar: false
          default_root_dir: {tmp_path}
          logger:
            class_path: csv
            init_args:
              name: from_config
        model:
          class_path: tiny_models.TinyModule
        data:
          class_path: tiny_models.TinyData
    """))
    from fulmen.cli import main

    assert main(["fit", "--config", str(config)]) == 0
    assert (tmp_path / "from_config" / "version_0" / "metrics.csv").exists()
    assert main(["fit", "--config", str(config), "--trainer.logger=tensorboard"]) == 0
    assert list((tmp_path / "fulmen_logs" / "version_0").glob("events.out.tfevents.*"))


# ------------------------------------------------------------------ the dispatch rules


def test_values_of_a_step_merge_and_no_step_is_written_twice():
    rec = Recorder()
    loggers = LoggerSet([rec], rank=lambda: 0)
    loggers.log_metrics({"loss": 1.0, "epoch": 0.0}, 0)
    loggers.log_metrics({"val": 2.0, "epoch": 0.0}, 0)  # same step: merged
    loggers.log_metrics({"loss": 3.0, "epoch": 1.0}, 1)
    loggers.log_metrics({"val_step": 4.0}, 0, training_axis=False)  # its own axis
    state = loggers.state_dict()
    loggers.log_metrics({"loss": 9.0}, 1)  # after a resume to step 1: already written
    loggers.log_metrics({"loss": 5.0}, 2)
    loggers.finalize("success")
    assert rec.named("log_metrics") == [
        ({"loss": 1.0, "epoch": 0.0, "val": 2.0}, 0), ({"loss": 3.0, "epoch": 1.0}, 1),
        ({"val_step": 4.0}, 0), ({"loss": 5.0}, 2)]
    assert rec.named("finalize") == ["success"]
    resumed = LoggerSet([Recorder()], rank=lambda: 0)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    resumed.log_metrics({"loss": 9.0}, 1)
    resumed.log_metrics({"loss": 9.0}, 2)
    resumed.flush()
    assert resumed.loggers[0].named("log_metrics") == [({"loss": 9.0}, 2)]


def test_other_ranks_never_call_a_logger():
    rec = Recorder()
    loggers = LoggerSet([rec], rank=lambda: 1)
    loggers.log_metrics({"loss": 1.0}, 0)
    loggers.log_hyperparams({"lr": 1})
    loggers.finalize("failed")
    assert rec.calls == []
    assert not NoOpExperiment().anything(1, x=2)["key"]  # what `experiment` is there


def test_hyperparameters_once_as_plain_data_with_references():
    rec = Recorder()
    loggers = LoggerSet([rec], rank=lambda: 0)
    params = {"lr": 0.1, "act": torch.nn.Tanh(), "fn": torch.nn.functional.relu,
              "builtin": torch.relu, "cls": torch.nn.Linear, "nested": {"n": 1}}
    loggers.log_hyperparams(params)
    loggers.log_hyperparams(params)
    (logged,) = rec.named("log_hyperparams")
    assert logged == {"lr": 0.1, "act": {"class_path": "torch.nn.modules.activation.Tanh",
                                         "init_args": {}},
                      "fn": "torch.nn.functional:relu", "builtin": "torch:relu",
                      "cls": "torch.nn.modules.linear:Linear", "nested": {"n": 1}}


def test_a_failing_tracker_is_reported_once_and_training_goes_on(tmp_path):
    broken, healthy = Recorder(fail_in="log_metrics"), Recorder()
    trainer = fulmen.Trainer(logger=[broken, healthy], default_root_dir=str(tmp_path), **FLAGS)
    with pytest.warns(LoggerWarning) as caught:
        trainer.fit(TinyModule(), loader(32))
    messages = [str(w.message) for w in caught if issubclass(w.category, LoggerWarning)]
    assert len(messages) == 1 and "failed in log_metrics: ConnectionError: tracker down" in \
        messages[0] and "training goes on" in messages[0]
    assert trainer.global_step == 4
    assert len(broken.named("log_metrics")) == 1 and broken.named("finalize") == []
    assert trainer.logger_set.dropped == 4  # 3 more steps and finalize, not made
    assert len(healthy.named("log_metrics")) == 4 and healthy.named("finalize") == ["success"]


def test_a_tracker_that_must_not_fail_stops_training(tmp_path):
    strict = Recorder(fail_in="log_metrics", raise_on_error=True)
    trainer = fulmen.Trainer(logger=strict, default_root_dir=str(tmp_path), **FLAGS)
    with pytest.raises(ConnectionError, match="tracker down"):
        trainer.fit(TinyModule(), loader(32))
    assert strict.named("finalize") == ["failed"]


def test_finalize_gets_the_status_once_per_stage(tmp_path):
    class Interrupting(TinyModule):
        def training_step(self, batch: Any, batch_idx: int) -> Any:
            if self.global_step == 2:
                raise KeyboardInterrupt
            return super().training_step(batch, batch_idx)

    rec = Recorder()
    trainer = fulmen.Trainer(logger=rec, default_root_dir=str(tmp_path), **FLAGS)
    trainer.fit(TinyModule(), loader(32))
    with pytest.raises(KeyboardInterrupt):
        fulmen.Trainer(logger=rec, default_root_dir=str(tmp_path), **FLAGS).fit(
            Interrupting(), loader(32))
    assert rec.named("finalize") == ["success", "interrupted"]


def test_lite_logs_through_the_same_rules_and_finalizes_after_its_function():
    rec, broken = Recorder(), Recorder(fail_in="log_metrics")
    lite = fulmen.Lite(accelerator="cpu", devices=1, loggers=[rec, broken])

    def train(lite: fulmen.Lite) -> None:
        lite.log("loss", torch.tensor(1.5))
        lite.log_dict({"loss": 1.0, "acc": 0.5})
        lite.log("loss", 0.5, step=1)  # step 1 again: already written

    with pytest.warns(LoggerWarning, match="failed in log_metrics"):
        lite.launch(train)
    assert rec.named("log_metrics") == [({"loss": 1.5}, 0), ({"loss": 1.0, "acc": 0.5}, 1)]
    assert rec.named("finalize") == ["success"] and broken.named("finalize") == []


def test_checkpoint_artifacts_follow_the_callback(tmp_path):
    class Callback:  # ModelCheckpoint's public state, as after_save_checkpoint sees it
        save_top_k = 2
        best_k_models: dict[str, torch.Tensor] = {}
        best_model_path = last_model_path = ""

    files = {}
    for name in ("epoch=0-step=4", "epoch=1-step=8", "epoch=2-step=12"):
        files[name] = tmp_path / f"{name}.ckpt"
        files[name].write_bytes(b"x")
    cb, artifacts = Callback(), CheckpointArtifacts("all")
    assert artifacts.now(cb)
    cb.best_k_models = {str(files["epoch=0-step=4"]): torch.tensor(1.0)}
    cb.best_model_path = str(files["epoch=0-step=4"])
    new, gone = artifacts.changes(cb)
    assert [(n.artifact_name, n.aliases) for n in new] == [("epoch_0-step_4", ("latest", "best"))]
    artifacts.uploaded_file(new[0])
    cb.best_k_models = {str(files["epoch=1-step=8"]): torch.tensor(0.5),
                        str(files["epoch=2-step=12"]): torch.tensor(0.7)}
    cb.best_model_path = str(files["epoch=1-step=8"])
    new, gone = artifacts.changes(cb)
    assert sorted(n.artifact_name for n in new) == ["epoch_1-step_8", "epoch_2-step_12"]
    assert gone == [str(files["epoch=0-step=4"])]
    assert artifacts.deleted(gone[0]) == "epoch_0-step_4"
    assert artifact_name("a/b/weird name#1.ckpt") == "weird_name_1"
    with pytest.raises(ConfigurationError, match="log_model='sometimes'"):
        CheckpointArtifacts("sometimes")


def test_the_run_id_goes_into_checkpoints_and_back(tmp_path):
    first = CSVLogger(tmp_path)
    trainer = fulmen.Trainer(logger=first, default_root_dir=str(tmp_path), **FLAGS)
    trainer.fit(TinyModule(), loader(32))
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    CSVLogger(tmp_path).log_metrics({"x": 1.0}, 0)  # another run takes version_1
    second = CSVLogger(tmp_path)
    trainer = fulmen.Trainer(logger=second, default_root_dir=str(tmp_path),
                             **{**FLAGS, "max_steps": 6})
    trainer.fit(TinyModule(), loader(32), ckpt_path=str(tmp_path / "a.ckpt"))
    assert second.version == first.version == 0
    steps = [s for s, _ in second.read_run().metrics["train_loss"]]
    assert steps == list(range(6))


def test_a_job_killed_after_its_checkpoint_does_not_rewrite_steps(tmp_path):
    """Resumed from the step-3 checkpoint of a job that had logged up to step 5: the tracker's
    steps 3..5 stay as they were, the new ones follow (each step once)."""
    from fulmen.callbacks import ModelCheckpoint

    every3 = ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=3, save_top_k=-1)
    fulmen.Trainer(logger=CSVLogger(tmp_path), default_root_dir=str(tmp_path), callbacks=[every3],
                   **{**FLAGS, "max_steps": 6, "enable_checkpointing": True}).fit(
        TinyModule(), loader(48))
    resumed = CSVLogger(tmp_path)
    fulmen.Trainer(logger=resumed, default_root_dir=str(tmp_path),
                   **{**FLAGS, "max_steps": 8}).fit(
        TinyModule(), loader(48), ckpt_path=str(tmp_path / "ckpt" / "epoch=0-step=3.ckpt"))
    assert resumed.version == 0
    assert [s for s, _ in resumed.read_run().metrics["train_loss"]] == list(range(8))


# ------------------------------------------------------------------ a third-party logger

ACME = '''
import json, os
from pathlib import Path
from fulmen import LoggerSpec, hookimpl
from fulmen.api.logger import Logger, RunRecord, rank_zero_experiment


class AcmeLogger(Logger):
    """A tracker whose runs are JSON-lines files: <root>/acme/<run id>.jsonl."""

    def __init__(self, root="."):
        self.root, self.run_id, self._file = Path(root) / "acme", None, None

    @classmethod
    def for_root_dir(cls, root_dir, **kwargs):
        return cls(root=root_dir, **kwargs)

    @property
    @rank_zero_experiment
    def experiment(self):
        if self._file is None:
            self.root.mkdir(parents=True, exist_ok=True)
            self.run_id = self.run_id or f"run{len(list(self.root.glob('*.jsonl')))}"
            self._file = open(self.root / f"{self.run_id}.jsonl", "a")
        return self._file

    @property
    def version(self):
        return self.run_id

    def __getstate__(self):
        return {**self.__dict__, "_file": None}

    def _write(self, **record):
        self.experiment.write(json.dumps(record) + "\\n")

    def log_metrics(self, metrics, step):
        self._write(step=step, metrics=metrics)

    def log_hyperparams(self, params):
        self._write(params=params)

    def finalize(self, status):
        if self._file is not None:
            self._write(status=status)
            self._file.close()
            self._file = None

    def state_dict(self):
        return {"run_id": self.run_id}

    def load_state_dict(self, state):
        self.run_id = state.get("run_id") or self.run_id

    def read_run(self):
        metrics, params, status = {}, {}, None
        path = self.root / f"{self.run_id}.jsonl"
        for line in path.read_text().splitlines():
            record = json.loads(line)
            for key, value in record.get("metrics", {}).items():
                metrics.setdefault(key, []).append((record["step"], value))
            params.update(record.get("params", {}))
            status = record.get("status", status)
        return RunRecord(metrics, params, status, runs=len(list(self.root.glob("*.jsonl"))))


@hookimpl
def fulmen_loggers():
    yield LoggerSpec(name="acme", target=AcmeLogger, description="Acme's tracker")
'''


def test_a_third_party_logger_is_selected_by_name_and_passes_the_kit(fake_dists, tmp_path):
    from fulmen.testing import Runner, select_targets

    module = fake_dists.unique("acme_fulmen")
    fake_dists.add("acme-fulmen", {"acme": module}, {module: ACME})
    fake_dists.reload()
    trainer = fulmen.Trainer(logger="acme", default_root_dir=str(tmp_path), **FLAGS)
    trainer.fit(TinyModule(), loader(32))
    lines = (tmp_path / "acme" / "run0.jsonl").read_text().splitlines()
    assert json.loads(lines[-1]) == {"status": "success"}
    report = Runner(timeout=240).run(select_targets(["acme"]))
    verdicts = {r.clause: r.status for r in report.results}
    assert verdicts == {"plugin.loads": "pass", "logger.rank_zero": "pass",
                        "logger.fit": "pass", "logger.resume": "pass",
                        "logger.failed_status": "pass"}, report.as_dict()
