"""``fulmen fit|validate|test|predict``: build everything from a config with jsonargparse.

    fulmen fit --config digits.yaml --trainer.max_epochs 3 --model.init_args.lr 0.01
    fulmen fit --config digits.yaml --print_config     # the full resolved config

Config layout (LightningCLI's): ``seed_everything``, ``trainer`` (Trainer flags), ``model`` and
``data`` (``class_path`` of a fulmen.Module / fulmen.DataModule subclass + ``init_args``), and
``ckpt_path``. The four subcommands share one config: after ``fit``, ``test_after_fit: true``
also runs the test loop, and the other subcommands accept the key and leave it unused.
``predict`` writes every rank's predictions into the run's log directory
(``--predictions_dir`` elsewhere). Every run saves the resolved config as ``config.yaml`` in the
run's log directory (``--save_config false`` turns it off, ``--save_config overwrite`` replaces
one that is there).
"""

from __future__ import annotations

import difflib
import inspect
import logging
import sys
from pathlib import Path
from typing import Any

import yaml
from jsonargparse import ActionConfigFile, ArgumentParser, Namespace

from fulmen.callbacks.base import Callback
from fulmen.callbacks.prediction_writer import PredictionWriter
from fulmen.datamodule import DataModule
from fulmen.errors import ConfigurationError
from fulmen.module import Module
from fulmen.seed import seed_everything
from fulmen.trainer import Trainer

log = logging.getLogger("fulmen.cli")

TOP_LEVEL = ("seed_everything", "trainer", "model", "data", "ckpt_path", "test_after_fit",
             "predictions_dir", "save_config")
SAVE_CONFIG = ("true", "false", "overwrite")


class SaveConfigCallback(Callback):
    """Write the resolved config as ``config.yaml`` into the run's log directory (rank 0).

    As LightningCLI's: a ``config.yaml`` left by another run is not overwritten unless
    ``overwrite=True``. The config file the run was started from is never written over.
    """

    def __init__(self, text: str, sources: list[Path], overwrite: bool = False) -> None:
        self.text, self.sources, self.overwrite = text, sources, overwrite
        self.saved_to: Path | None = None

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.saved_to is not None or not trainer.is_global_zero:
            return
        path = Path(trainer.log_dir) / "config.yaml"
        if any(path.resolve() == s for s in self.sources):
            log.warning("not saving the resolved config to %s: that is the config file this run "
                        "was started from", path)
            return
        if path.exists() and not self.overwrite and path.read_text() != self.text:
            raise ConfigurationError(
                f"{path} exists (from an earlier run) and would be overwritten by this run's "
                "config; use another --trainer.default_root_dir or logger version, delete the "
                "file, or pass --save_config overwrite (--save_config false saves nothing)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text)
        self.saved_to = path
        log.info("config saved to %s", path)


def build_parser(stage: str) -> ArgumentParser:
    parser = ArgumentParser(prog=f"fulmen {stage}", description=f"Run Trainer.{stage} from a "
                            "config file and/or flags. " + _registered_names(),
                            exit_on_error=False, allow_abbrev=False)
    parser.add_argument("--config", action=ActionConfigFile, help="a YAML config file")
    parser.add_argument("--seed_everything", type=int | bool | None, default=True,
                        help="an int seed, true for a random one, false for none")
    parser.add_class_arguments(Trainer, "trainer", fail_untyped=False)
    parser.add_subclass_arguments(Module, "model", required=True,
                                  help="a fulmen.Module subclass: class_path + init_args")
    parser.add_subclass_arguments(DataModule, "data", required=False,
                                  help="a fulmen.DataModule subclass: class_path + init_args")
    parser.add_argument("--ckpt_path", type=str | None, default=None,
                        help="checkpoint to start from ('best', 'last' or a path)")
    parser.add_argument("--test_after_fit", type=bool, default=False,
                        help="fit only: run trainer.test with the best checkpoint after fit")
    parser.add_argument("--predictions_dir", type=str | None, default=None,
                        help="predict only: where predictions_rank<r>.pt go (default: the "
                        "run's log directory)")
    parser.add_argument("--save_config", type=str, default="true",
                        help="save the resolved config as config.yaml in the run's log "
                        "directory: true, false, or overwrite")
    return parser


def _registered_names() -> str:
    """The names registered right now, for ``--help`` (reads records; imports no plugin)."""
    try:
        from fulmen.catalog import KINDS, PLURAL
        from fulmen.manager import get_plugin_manager

        catalog = get_plugin_manager().catalog()
        parts = [f"{PLURAL[k]}: {', '.join(e.record.name for e in catalog.entries(k))}"
                 for k in KINDS]
    except Exception as exc:  # --help must work even with a broken plugin set
        return f"(registered plugin names unavailable: {exc})"
    return "Registered " + "; ".join(parts) + ". `fulmen plugins` shows more."


def run(argv: list[str]) -> int:
    stage, rest = argv[0], argv[1:]
    problem = _check_config_files(rest)
    if problem:
        print(f"fulmen {stage}: error: {problem}", file=sys.stderr)
        return 2
    parser = build_parser(stage)
    print_config = "--print_config" in rest
    rest = [a for a in rest if a != "--print_config"]
    config = _parse(parser, rest, stage)
    if config is None:
        return 2
    if print_config:
        print(parser.dump(config, skip_none=False), end="")
        return 0
    if config.save_config not in SAVE_CONFIG:
        print(f"fulmen {stage}: error: --save_config {config.save_config!r}: use one of "
              f"{', '.join(SAVE_CONFIG)}", file=sys.stderr)
        return 2
    if stage != "fit" and config.test_after_fit:
        log.info("test_after_fit applies to `fulmen fit`; `fulmen %s` leaves it unused", stage)
    seed = config.seed_everything
    if seed is True:
        import random

        seed = random.randint(0, 2**31 - 1)
    if seed is not False and seed is not None:
        seed_everything(int(seed))
    try:
        objects = parser.instantiate_classes(config)
    except ConfigurationError as exc:
        print(f"fulmen {stage}: error: {exc}", file=sys.stderr)
        return 2
    trainer: Trainer = objects.trainer
    model, data = objects.model, objects.data
    if config.save_config != "false":
        trainer.callbacks.append(SaveConfigCallback(
            parser.dump(config, skip_none=False), _config_sources(rest),
            overwrite=config.save_config == "overwrite"))
    try:
        _run_stage(stage, config, trainer, model, data)
    except ConfigurationError as exc:
        print(f"fulmen {stage}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _run_stage(stage: str, config: Namespace, trainer: Trainer, model: Module,
               data: DataModule | None) -> None:
    kwargs: dict[str, Any] = {"datamodule": data, "ckpt_path": config.ckpt_path}
    if stage == "fit":
        trainer.fit(model, **kwargs)
        if config.test_after_fit:
            trainer.test(model, datamodule=data,
                         ckpt_path="best" if trainer.checkpoint_callback is not None and
                         trainer.checkpoint_callback.best_model_path else None)
    elif stage == "predict":
        writer = PredictionWriter(config.predictions_dir, write_interval="epoch")
        trainer.callbacks.append(writer)
        trainer.predict(model, return_predictions=False, **kwargs)
        for path in writer.written:
            print(f"predictions written to {path}")
    else:
        getattr(trainer, stage)(model, **kwargs)


def _config_sources(args: list[str]) -> list[Path]:
    return [Path(args[i + 1]).resolve() for i, a in enumerate(args[:-1]) if a == "--config"]


def _check_config_files(args: list[str]) -> str | None:
    """Problems jsonargparse reports without naming the file or the key: a missing or empty
    file, a file that is not a mapping, and misspelt top-level or trainer keys."""
    for path in _config_sources(args):
        if not path.is_file():
            return f"config file {str(path)!r} does not exist"
        try:
            content = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            return f"config file {str(path)!r} is not valid YAML: {exc}"
        if content is None:
            return (f"config file {str(path)!r} is empty: it needs at least `model:` with a "
                    "class_path (see `fulmen fit --print_config` for the layout)")
        if not isinstance(content, dict):
            return (f"config file {str(path)!r} holds a {type(content).__name__}, not a mapping "
                    f"of {', '.join(TOP_LEVEL)}")
        problem = _unknown_key(path, "", content, TOP_LEVEL)
        trainer = content.get("trainer")
        if problem is None and isinstance(trainer, dict):
            accepted = tuple(inspect.signature(Trainer.__init__).parameters)[1:]
            problem = _unknown_key(path, "trainer.", trainer, accepted)
        if problem:
            return problem
    return None


def _unknown_key(path: Path, prefix: str, content: dict[str, Any],
                 accepted: tuple[str, ...]) -> str | None:
    for key in content:
        if key not in accepted:
            close = difflib.get_close_matches(str(key), accepted, n=1)
            hint = f"did you mean {prefix + close[0]!r}? " if close else ""
            where = f"under {prefix[:-1]!r}" if prefix else "at the top level"
            return (f"config file {str(path)!r}: unknown key {prefix + str(key)!r}; {hint}"
                    f"accepted keys {where}: {', '.join(accepted)}")
    return None


def _parse(parser: ArgumentParser, args: list[str], stage: str) -> Namespace | None:
    try:
        return parser.parse_args(args)
    except Exception as exc:  # jsonargparse names the key and what it expected
        sources = ", ".join(repr(str(p)) for p in _config_sources(args))
        where = f" (config: {sources})" if sources else ""
        print(f"fulmen {stage}: error{where}: {exc}", file=sys.stderr)
        print(f"(fulmen {stage} --help lists every option)", file=sys.stderr)
        return None
