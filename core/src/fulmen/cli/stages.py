"""``FulmenCLI`` (LightningCLI on jsonargparse) and ``fulmen fit|validate|test|predict``.

    fulmen fit --config digits.yaml --trainer.max_epochs 3 --model.init_args.lr 0.01
    fulmen fit --model=tiny.TinyModel --model.lr=0.05 --data=tiny.TinyData
    fulmen fit --config digits.yaml --print_config     # the full resolved config

Config layout (LightningCLI's): ``seed_everything``, ``trainer`` (Trainer flags), ``model`` and
``data`` (``class_path`` of a fulmen.Module / fulmen.DataModule subclass + ``init_args``), and
``ckpt_path``. The four subcommands share one config: after ``fit``, ``test_after_fit: true``
also runs the test loop, and the other subcommands accept the key and leave it unused.
``predict`` writes every rank's predictions into the run's log directory
(``--predictions_dir`` elsewhere). Every run saves the resolved config as ``config.yaml`` in the
run's log directory (``--save_config false`` turns it off, ``--save_config overwrite`` replaces
one that is there).

In a script, ``FulmenCLI(MyModel, MyData)`` gives the same subcommands; subclass it and override
``add_arguments_to_parser`` to link arguments (``parser.link_arguments("data.num_classes",
"model.init_args.num_classes", apply_on="instantiate")``), as with LightningCLI.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml
from jsonargparse import ActionConfigFile, ArgumentParser, Namespace

from fulmen.callbacks.base import Callback
from fulmen.callbacks.prediction_writer import PredictionWriter
from fulmen.cli import commands
from fulmen.cli.parsing import CLIExit, chosen_subcommand, fail, top_parser
from fulmen.datamodule import DataModule
from fulmen.errors import ConfigurationError
from fulmen.module import Module
from fulmen.seed import seed_everything
from fulmen.status import configure_logging
from fulmen.trainer import Trainer

log = logging.getLogger("fulmen.cli")

STAGES = {name: commands.SUBCOMMANDS[name].help for name in commands.STAGES}
TOP_LEVEL = ("seed_everything", "trainer", "model", "data", "ckpt_path", "test_after_fit",
             "predictions_dir", "save_config")
SAVE_CONFIG = ("true", "false", "overwrite")
SELECTION_FLAGS = {"accelerator": "accelerator", "strategy": "strategy",
                   "precision": "precision", "plugins": "environment"}
#: the kinds ``--trainer.plugins`` takes by name
PLUGINS_BY_NAME = ("environment", "precision", "notice")


class SaveConfigCallback(Callback):
    """Write the resolved config as ``config.yaml`` into the run's log directory (rank 0).

    Lightning's signature: ``SaveConfigCallback(parser, config, config_filename="config.yaml",
    overwrite=False, multifile=False, save_to_log_dir=True)``; subclass it and override
    :meth:`save_config` to send the config elsewhere (a tracker), as with LightningCLI. A
    ``config.yaml`` left by another run is not overwritten unless ``overwrite=True``; the config
    file the run was started from (``sources``) is never written over. ``multifile`` is taken
    and writes one file, as jsonargparse dumps the whole config.
    """

    def __init__(self, parser: ArgumentParser, config: Namespace,
                 config_filename: str = "config.yaml", overwrite: bool = False,
                 multifile: bool = False, save_to_log_dir: bool = True) -> None:
        self.parser, self.config = parser, config
        self.config_filename, self.overwrite = config_filename, overwrite
        self.multifile, self.save_to_log_dir = multifile, save_to_log_dir
        self.text = parser.dump(config, skip_unset=False)
        self.sources: list[Path] = []  # the config files of this run (set by the CLI)
        self.saved_to: Path | None = None
        self.already_saved = False

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.already_saved:
            return
        if self.save_to_log_dir and trainer.is_global_zero:
            self._save_to_log_dir(trainer)
        self.already_saved = True
        self.save_config(trainer, module, stage)

    def save_config(self, trainer: Any, module: Any, stage: str) -> None:
        """Override to save the config elsewhere too (called once, on every rank)."""

    def _save_to_log_dir(self, trainer: Any) -> None:
        path = Path(trainer.log_dir) / self.config_filename
        if any(path.resolve() == s for s in self.sources):
            log.warning("not saving the resolved config to %s: that is the config file this run "
                        "was started from", path)
            return
        if path.exists() and not self.overwrite and path.read_text() != self.text:
            raise ConfigurationError(
                f"{path} exists (from an earlier run) and would be overwritten by this run's "
                "config; use another --trainer.default_root_dir or logger version, delete the "
                "file, or pass --save_config overwrite (--save_config false saves nothing; "
                "FulmenCLI(save_config_kwargs={'overwrite': True}) as in LightningCLI)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text)
        self.saved_to = path
        log.info("config saved to %s", path)


class LightningArgumentParser(ArgumentParser):
    """jsonargparse's parser with Lightning's ``add_lightning_class_args``: a callback class's
    arguments under ``nested_key`` (``--finetuning.milestones``), the callback built and added
    to the Trainer's callbacks after the configured ones, as LightningCLI does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the keys whose values are callbacks for the Trainer
        self.callback_keys: list[str] = []

    def add_lightning_class_args(self, lightning_class: Any, nested_key: str,
                                 subclass_mode: bool = False, required: bool = True
                                 ) -> list[str]:
        """Add ``lightning_class``'s arguments under ``nested_key``; a ``Callback`` (class or
        subclass mode) is added to the Trainer's callbacks."""
        is_callback = isinstance(lightning_class, type) and issubclass(lightning_class,
                                                                        Callback)
        if not (callable(lightning_class) and (is_callback or isinstance(lightning_class,
                                                                        type))):
            raise ConfigurationError(
                f"add_lightning_class_args({lightning_class!r}, {nested_key!r}): expected a "
                "class (a Callback, Module or DataModule subclass)")
        if is_callback:
            self.callback_keys.append(nested_key)
        if subclass_mode:
            return self.add_subclass_arguments(lightning_class, nested_key, fail_untyped=False,
                                               required=required)
        return self.add_class_arguments(lightning_class, nested_key, fail_untyped=False,
                                        sub_configs=True)


class FulmenCLI:
    """Build the model, data and Trainer from config files and flags, and run a stage.

    Args:
        model_class: a ``fulmen.Module`` class whose arguments become ``--model.*``; None: any
            subclass, chosen with ``--model=pkg.Class`` (or ``class_path:`` in the config).
        datamodule_class: the same for ``--data``; None: any ``fulmen.DataModule`` subclass
            (optional).
        save_config_callback: the callback that saves the resolved config (None: none), made
            as ``save_config_callback(parser, config, **save_config_kwargs)``.
        save_config_kwargs: its keyword arguments (``{"overwrite": True}``, ``config_filename``,
            ``save_to_log_dir``).
        trainer_class: the Trainer class to build.
        trainer_defaults: defaults for Trainer flags (the config and flags still win);
            ``callbacks`` may hold instances, added to the configured ones (LightningCLI).
        seed_everything_default: the default of ``--seed_everything`` (True: a random seed).
        parser_kwargs: extra keyword arguments for every ``jsonargparse.ArgumentParser``.
        subclass_mode_model: accept subclasses of ``model_class`` (``--model=pkg.Class``).
        subclass_mode_data: accept subclasses of ``datamodule_class``.
        parser_class: the ``jsonargparse.ArgumentParser`` (sub)class of every parser.
        args: the command line (default ``sys.argv[1:]``).
        run: True: subcommands ``fit``/``validate``/``test``/``predict``, and the chosen one runs;
            False: no subcommand, the objects are only built (``cli.trainer``, ``cli.model``).
        auto_configure_optimizers: add ``--optimizer`` and ``--lr_scheduler`` (any
            ``torch.optim`` class); when the config sets ``optimizer``, the model's
            ``configure_optimizers`` returns it (and the scheduler), as in LightningCLI.
    """

    prog = "fulmen"

    def __init__(self, model_class: type[Module] | None = None,
                 datamodule_class: type[DataModule] | None = None,
                 save_config_callback: type[SaveConfigCallback] | None = SaveConfigCallback,
                 save_config_kwargs: dict[str, Any] | None = None,
                 trainer_class: type[Trainer] = Trainer,
                 trainer_defaults: dict[str, Any] | None = None,
                 seed_everything_default: bool | int = True,
                 parser_kwargs: dict[str, Any] | None = None,
                 parser_class: type[ArgumentParser] = LightningArgumentParser,
                 subclass_mode_model: bool = False, subclass_mode_data: bool = False,
                 args: list[str] | None = None, run: bool = True,
                 auto_configure_optimizers: bool = True) -> None:
        self.model_class, self.datamodule_class = model_class, datamodule_class
        self.save_config_callback = save_config_callback
        self.save_config_kwargs = dict(save_config_kwargs or {})
        self.parser_class = parser_class
        self.auto_configure_optimizers = auto_configure_optimizers
        self.subclass_mode_model = model_class is None or subclass_mode_model
        self.subclass_mode_data = datamodule_class is None or subclass_mode_data
        self.trainer_class, self.trainer_defaults = trainer_class, trainer_defaults or {}
        self.seed_everything_default = seed_everything_default
        self.parser_kwargs = parser_kwargs or {}
        argv = list(sys.argv[1:] if args is None else args)
        self.subcommand: str | None = None
        self.exit_code = self.main(argv, run)

    # ------------------------------------------------------------------ parser

    def init_parser(self, **kwargs: Any) -> ArgumentParser:
        """A parser with this CLI's defaults (``exit_on_error=False``: errors come back here)."""
        return self.parser_class(**{"exit_on_error": False, "allow_abbrev": False,
                                    **self.parser_kwargs, **kwargs})

    def add_core_arguments_to_parser(self, parser: ArgumentParser) -> None:
        """``--config``, ``--seed_everything``, the Trainer's flags, ``--model``, ``--data``."""
        parser.add_argument("--config", action=ActionConfigFile, help="a YAML config file "
                            "(several are merged in order; later flags win)")
        parser.add_argument("--seed_everything", type=int | bool | None,
                            default=self.seed_everything_default,
                            help="an int seed, true for a random one, false for none")
        skip = set(SELECTION_FLAGS)
        parser.add_class_arguments(self.trainer_class, "trainer", fail_untyped=False,
                                   instantiate=False, skip=skip)
        names = registered_names()
        for flag, kind in SELECTION_FLAGS.items():
            default = inspect.signature(self.trainer_class.__init__).parameters[flag].default
            kind_type: Any = list[str] | str | None if flag == "plugins" else int | str \
                if flag == "precision" else str
            registered = "; ".join(f"{k}s: {names.get(k)}" for k in PLUGINS_BY_NAME) \
                if flag == "plugins" else names.get(kind)
            parser.add_argument(f"--trainer.{flag}", type=kind_type, default=default,
                                help=f"{_flag_help(flag)} Registered now: {registered}")
        defaults = {f"trainer.{k}": v for k, v in self.trainer_defaults.items()
                    if k != "callbacks"}  # instances: added when the Trainer is made
        if defaults:
            parser.set_defaults(defaults)
        if self.auto_configure_optimizers:
            from torch.optim import Optimizer
            from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

            parser.add_subclass_arguments(Optimizer, "optimizer", required=False,
                                          instantiate=False, skip={"params"}, fail_untyped=False,
                                          help="an optimizer for the model's parameters "
                                          "(replaces its configure_optimizers)")
            parser.add_subclass_arguments((LRScheduler, ReduceLROnPlateau), "lr_scheduler",
                                          required=False, instantiate=False,
                                          skip={"optimizer"}, fail_untyped=False,
                                          help="a learning-rate scheduler for --optimizer")
        self._add_component(parser, "model", self.model_class, Module,
                            self.subclass_mode_model, required=True)
        self._add_component(parser, "data", self.datamodule_class, DataModule,
                            self.subclass_mode_data, required=False)

    @staticmethod
    def _add_component(parser: ArgumentParser, key: str, given: type | None, base: type,
                       subclass_mode: bool, required: bool) -> None:
        what = f"a {base.__module__.split('.')[0]}.{base.__name__} subclass"
        if subclass_mode:
            parser.add_subclass_arguments(given or base, key, required=required,
                                          help=f"{what}: --{key}=pkg.Class --{key}.arg=value, "
                                          "or class_path + init_args in the config")
        elif given is not None:
            parser.add_class_arguments(given, key, help=f"{given.__name__}'s arguments")

    def add_arguments_to_parser(self, parser: ArgumentParser) -> None:
        """Override to add arguments or link them (``parser.link_arguments(...)``)."""

    def stage_parser(self, stage: str) -> ArgumentParser:
        parser = self.init_parser(description=f"Run Trainer.{stage} from config files and/or "
                                  "flags.")
        self.add_core_arguments_to_parser(parser)
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
        self.add_arguments_to_parser(parser)
        return parser

    def subcommands(self) -> dict[str, str]:
        """Subcommand name → one-line help (the stages; the ``fulmen`` command adds more)."""
        return dict(STAGES)

    def subcommand_parser(self, name: str) -> ArgumentParser:
        """The parser of a subcommand other than a stage (the ``fulmen`` command's)."""
        raise NotImplementedError(name)

    def build_parser(self, chosen: str | None) -> ArgumentParser:
        """The top-level parser; only the chosen subcommand's parser is built in full (the
        others are listed in ``--help``)."""
        self.stage_parsers: dict[str, ArgumentParser] = {}

        def build(name: str) -> ArgumentParser:
            if name not in STAGES:
                return self.subcommand_parser(name)
            self.stage_parsers[name] = self.stage_parser(name)
            return self.stage_parsers[name]

        return top_parser(self.prog, self.subcommands(), build, chosen, self.parser_kwargs)

    # ------------------------------------------------------------------ running

    def main(self, argv: list[str], run: bool) -> int:
        try:
            if not run:
                self.parser = self.stage_parser("fit")
                self.config = self.parse(self.parser, argv, "")
                self.config_stage = self.config
                self.before_instantiate_classes()
                self.instantiate_classes()
                return 0
            chosen = chosen_subcommand(self.prog, argv, self.subcommands())
            if chosen is None and not any(a in ("-h", "--help", "--version") for a in argv):
                self.build_parser(None).print_help()  # a bare command asks for help
                return 0
            self.parser = self.build_parser(chosen)
            self.config = self.parse(self.parser, argv, chosen or "")
            self.subcommand = self.config.subcommand
            assert self.subcommand is not None
            if self.subcommand not in STAGES:
                return self.run_subcommand(self.subcommand, self.config[self.subcommand])
            self.config_stage = self.config[self.subcommand]
            self.before_instantiate_classes()
            self.instantiate_classes()
            self.run_stage(self.subcommand)
        except CLIExit as stop:
            return stop.code
        return 0

    @staticmethod
    def fail(code: int, message: str) -> None:
        fail(code, message)

    def parse(self, parser: ArgumentParser, argv: list[str], stage: str) -> Namespace:
        prefix = f"{self.prog} {stage}".strip()
        problem = check_config_files(argv)
        if problem:
            self.fail(2, f"{prefix}: error: {problem}")
        self.print_config = "--print_config" in argv
        argv = [a for a in argv if a != "--print_config"]
        self.sources = config_sources(argv)
        try:
            config = parser.parse_args(argv)
        except Exception as exc:  # jsonargparse names the key and what it expected
            sources = ", ".join(repr(str(p)) for p in self.sources)
            where = f" (config: {sources})" if sources else ""
            self.fail(2, f"{prefix}: error{where}: {exc}\n({prefix} --help lists every option)")
        if self.print_config:
            dump_parser = self.stage_parsers[stage] if stage in STAGES else parser
            shown = config[stage] if stage in STAGES else config
            print(dump_parser.dump(shown, skip_unset=False), end="")
            raise CLIExit(0)
        return config

    def run_subcommand(self, name: str, config: Namespace) -> int:
        raise NotImplementedError(name)

    def before_instantiate_classes(self) -> None:
        """Override: runs after parsing, before anything is built."""

    def instantiate_classes(self) -> None:
        """Build ``self.model``, ``self.datamodule`` and ``self.trainer`` from the config."""
        config = self.config_stage
        stage = self.subcommand or "fit"
        if config.save_config not in SAVE_CONFIG:
            self.fail(2, f"{self.prog} {stage}: error: --save_config {config.save_config!r}: "
                      f"use one of {', '.join(SAVE_CONFIG)}")
        seed = config.seed_everything
        if seed is True:
            seed = random.randint(0, 2**31 - 1)
        if seed is not False and seed is not None:
            seed_everything(int(seed))
        parser = self.parser if self.subcommand is None else self.stage_parsers[self.subcommand]
        try:
            self.config_init = parser.instantiate(config)
            self.model: Module = self.config_init.model
            self.datamodule: DataModule | None = self.config_init.get("data")
            self.trainer = self.instantiate_trainer()
        except ConfigurationError as exc:
            self.fail(2, f"{self.prog} {stage}: error: {exc}")
        if config.save_config != "false" and self.save_config_callback is not None and \
                not self.trainer.fast_dev_run:
            kwargs = dict(self.save_config_kwargs)
            if config.save_config == "overwrite":
                kwargs["overwrite"] = True
            callback = self.save_config_callback(parser, config, **kwargs)
            callback.sources = self.sources
            self.trainer.callbacks.append(callback)
        self._add_configure_optimizers_method_to_model()

    def instantiate_trainer(self, **kwargs: Any) -> Trainer:
        flags = {k: v for k, v in vars(self.config_init.trainer).items()}
        flags = {**flags, **kwargs}
        parser = self.parser if self.subcommand is None else self.stage_parsers[self.subcommand]
        keys = parser.callback_keys if isinstance(parser, LightningArgumentParser) else []
        from_keys = [self.config_init[key] for key in keys]  # add_lightning_class_args
        if from_keys:
            given = flags.get("callbacks")
            flags["callbacks"] = ([] if given is None else list(given) if isinstance(
                given, list | tuple) else [given]) + from_keys
        extra = self.trainer_defaults.get("callbacks")
        if extra is not None:  # LightningCLI: default callbacks (instances) come on top
            given = flags.get("callbacks")
            flags["callbacks"] = ([] if given is None else list(given) if isinstance(
                given, list | tuple) else [given]) + (list(extra) if isinstance(
                    extra, list | tuple) else [extra])
        return self.trainer_class(**flags)

    @staticmethod
    def configure_optimizers(module: Module, optimizer: Any, lr_scheduler: Any = None) -> Any:
        """What the model's ``configure_optimizers`` returns under ``--optimizer``
        (LightningCLI's): the optimizer, with the scheduler when one is configured."""
        if lr_scheduler is None:
            return optimizer
        from torch.optim.lr_scheduler import ReduceLROnPlateau

        if isinstance(lr_scheduler, ReduceLROnPlateau):
            monitor = vars(lr_scheduler).get("monitor")
            if monitor is None:
                raise ConfigurationError(
                    "--lr_scheduler ReduceLROnPlateau needs the metric it follows: use "
                    "fulmen.cli.stages.ReduceLROnPlateau (Lightning's, with monitor=...)")
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": lr_scheduler,
                                                             "monitor": monitor}}
        return [optimizer], [lr_scheduler]

    def _add_configure_optimizers_method_to_model(self) -> None:
        """With ``--optimizer`` set: the model's ``configure_optimizers`` returns it (and
        ``--lr_scheduler``), built on its parameters, as LightningCLI does."""
        config = self.config_init
        optimizer_init = config.get("optimizer") if self.auto_configure_optimizers else None
        if not optimizer_init:
            return
        import functools
        import types

        if type(self.model).configure_optimizers is not Module.configure_optimizers:
            log.warning("`%s.configure_optimizers` will be overridden by `%s."
                        "configure_optimizers`", type(self.model).__name__, type(self).__name__)
        optimizer = _instantiate(optimizer_init, self.model.parameters())
        scheduler_init = config.get("lr_scheduler")
        scheduler = _instantiate(scheduler_init, optimizer) if scheduler_init else None
        function = functools.partial(self.configure_optimizers, optimizer=optimizer,
                                     lr_scheduler=scheduler)
        self.model.configure_optimizers = types.MethodType(  # type: ignore[method-assign]
            lambda module: function(module), self.model)

    def run_stage(self, stage: str) -> None:
        config = self.config_stage
        before: Callable[[], None] | None = getattr(self, f"before_{stage}", None)
        if before is not None:
            before()
        try:
            _run_stage(stage, config, self.trainer, self.model, self.datamodule)
        except ConfigurationError as exc:
            self.fail(2, f"{self.prog} {stage}: error: {exc}")
        after: Callable[[], None] | None = getattr(self, f"after_{stage}", None)
        if after is not None:
            after()


class ReduceLROnPlateau(torch.optim.lr_scheduler.ReduceLROnPlateau):
    """torch's ``ReduceLROnPlateau`` with the metric it follows (LightningCLI's, for
    ``--lr_scheduler``)."""

    def __init__(self, optimizer: torch.optim.Optimizer, monitor: str, *args: Any,
                 **kwargs: Any) -> None:
        super().__init__(optimizer, *args, **kwargs)
        self.monitor = monitor


def _instantiate(init: Any, *args: Any) -> Any:
    """``class_path``/``init_args`` (a Namespace or dict) built with ``args`` first."""
    import importlib

    init = init.as_dict() if isinstance(init, Namespace) else dict(init)
    module, _, name = init["class_path"].rpartition(".")
    return getattr(importlib.import_module(module), name)(*args, **(init.get("init_args") or {}))


def _run_stage(stage: str, config: Namespace, trainer: Trainer, model: Module,
               data: DataModule | None) -> None:
    kwargs: dict[str, Any] = {"datamodule": data, "ckpt_path": config.ckpt_path}
    if stage != "fit" and config.test_after_fit:
        log.info("test_after_fit applies to `fulmen fit`; `fulmen %s` leaves it unused", stage)
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
            configure_logging().info("predictions written to %s", path)
    else:
        getattr(trainer, stage)(model, **kwargs)


def registered_names() -> dict[str, str]:
    """Kind → the names registered right now, for ``--help`` (reads records only)."""
    try:
        from fulmen.kernel.catalog import KINDS
        from fulmen.kernel.manager import get_plugin_manager

        catalog = get_plugin_manager().catalog()
        return {k: ", ".join(e.record.name for e in catalog.entries(k)) for k in KINDS}
    except Exception as exc:  # --help must work even with a broken plugin set
        return {k: f"(unavailable: {exc})" for k in SELECTION_FLAGS.values()}


def _flag_help(flag: str) -> str:
    return {"accelerator": "'auto' or a registered accelerator name.",
            "strategy": "'auto' or a registered strategy name.",
            "precision": "a registered precision name or alias.",
            "plugins": "registered environment, precision or stop-notice names "
                       "(e.g. '[aws_spot]')."}[flag]


def config_sources(args: list[str]) -> list[Path]:
    return [Path(args[i + 1]).resolve() for i, a in enumerate(args[:-1]) if a == "--config"]


def check_config_files(args: list[str]) -> str | None:
    """Problems jsonargparse reports without naming the file or the key: a missing or empty
    file, a file that is not a mapping, and misspelt top-level or trainer keys."""
    for path in config_sources(args):
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
        if problem is None and trainer is not None and not isinstance(trainer, dict):
            problem = (f"config file {str(path)!r}: `trainer:` holds the "
                       f"{type(trainer).__name__} {trainer!r}, but it must be a mapping of "
                       "Trainer arguments, one per line below it (`trainer:` then "
                       "`  max_epochs: 3`, `  accelerator: cpu`, ...); `fulmen fit "
                       "--print_config` shows them all")
        if problem is None and isinstance(trainer, dict):
            accepted = tuple(inspect.signature(Trainer.__init__).parameters)[1:]
            problem = _unknown_key(path, "trainer.", trainer, accepted) or \
                _check_callbacks(path, trainer.get("callbacks"))
        if problem:
            return problem
    return None


def _check_callbacks(path: Path, callbacks: Any) -> str | None:
    """Each ``trainer.callbacks`` entry given as ``class_path``/``init_args``: the class imports,
    is a Callback, and takes each argument with a value of its type (jsonargparse's own check,
    run on that class alone so that its answer names the argument, not the union of every
    form ``callbacks`` accepts)."""
    if callbacks is None:
        return None
    items = callbacks if isinstance(callbacks, list) else [callbacks]
    for index, item in enumerate(items):
        where = f"trainer.callbacks[{index}]" if isinstance(callbacks, list) else \
            "trainer.callbacks"
        init_args: Any
        if isinstance(item, str):
            class_path, init_args = item, {}
        elif isinstance(item, dict) and isinstance(item.get("class_path"), str):
            class_path, init_args = item["class_path"], item.get("init_args") or {}
        else:
            continue  # the other forms jsonargparse accepts: it reports them itself
        prefix = f"config file {str(path)!r}: {where} ({class_path})"
        if "." not in class_path:
            continue  # a short name jsonargparse resolves among imported subclasses
        if not isinstance(init_args, dict):
            return (f"{prefix}: init_args holds a {type(init_args).__name__}, not a mapping of "
                    "the callback's arguments")
        module_name, _, attr = class_path.rpartition(".")
        try:
            import importlib

            cls = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            return (f"{prefix}: class_path cannot be imported ({type(exc).__name__}: {exc}); "
                    "give the full dotted path of the class, e.g. "
                    "fulmen.callbacks.ModelCheckpoint")
        if not (isinstance(cls, type) and issubclass(cls, Callback)):
            return f"{prefix}: {class_path} is not a subclass of fulmen.Callback"
        parameters = inspect.signature(cls.__init__).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        accepted = tuple(n for n, p in parameters.items() if n != "self"
                         and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
        if not takes_any:
            unknown = _unknown_key(path, f"{where}.init_args.", init_args, accepted)
            if unknown:
                return unknown.replace("accepted keys under",
                                       f"{cls.__name__} takes, under")
        parser = ArgumentParser(exit_on_error=False)
        try:
            parser.add_class_arguments(cls)
            parser.parse_object(init_args)
        except Exception as exc:
            return f"{prefix}: {_argument_problem(str(exc), init_args)}"
    return None


def _argument_problem(text: str, given: dict[str, Any]) -> str:
    """jsonargparse's error for one class's arguments as ``init_args.KEY: expected ...``."""
    import re

    found = re.search(r'[Kk]ey "([^"]+)":\s*(.*?)(?:\n|$)', text)
    if found is None:
        return text.strip().splitlines()[0]
    key, why = found.group(1), found.group(2).strip()
    expected = re.sub(r"<class '([\w.]+)'>", r"\1", why)
    expected = re.sub(r"^Expected a ", "expected ", expected)
    expected = re.sub(r"\. Got value: .*$", "", expected)
    return f"init_args.{key}: {expected}, got {given.get(key)!r}"


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


class FulmenCommand(FulmenCLI):
    """The ``fulmen`` command: the stages, plus every other row of :data:`commands.SUBCOMMANDS`."""

    def subcommands(self) -> dict[str, str]:
        return commands.helps()

    def subcommand_parser(self, name: str) -> ArgumentParser:
        return commands.subcommand_parser(name)

    def run_subcommand(self, name: str, config: Namespace) -> int:
        return commands.run_subcommand(name, config)
