"""``fulmen fit|validate|test|predict``: build everything from a config with jsonargparse.

    fulmen fit --config digits.yaml --trainer.max_epochs 3 --model.init_args.lr 0.01
    fulmen fit --config digits.yaml --print_config     # the full resolved config

Config layout (LightningCLI's): ``seed_everything``, ``trainer`` (Trainer flags), ``model`` and
``data`` (``class_path`` of a fulmen.Module / fulmen.DataModule subclass + ``init_args``), and
``ckpt_path``. After ``fit``, ``test_after_fit: true`` also runs the test loop.
"""

from __future__ import annotations

import sys
from typing import Any

from jsonargparse import ActionConfigFile, ArgumentParser, Namespace

from fulmen.datamodule import DataModule
from fulmen.errors import ConfigurationError
from fulmen.module import Module
from fulmen.seed import seed_everything
from fulmen.trainer import Trainer


def build_parser(stage: str) -> ArgumentParser:
    parser = ArgumentParser(prog=f"fulmen {stage}", description=f"Run Trainer.{stage} from a "
                            "config file and/or flags.", exit_on_error=False,
                            allow_abbrev=False)
    parser.add_argument("--config", action=ActionConfigFile, help="a YAML config file")
    parser.add_argument("--seed_everything", type=int | bool | None, default=True,
                        help="an int seed, true for a random one, false for none")
    parser.add_class_arguments(Trainer, "trainer", fail_untyped=False)
    parser.add_subclass_arguments(Module, "model", required=True,
                                  help="a fulmen.Module subclass: class_path + init_args")
    parser.add_subclass_arguments(DataModule, "data", required=False,
                                  help="a fulmen.DataModule subclass: class_path + init_args")
    parser.add_argument("--ckpt_path", type=str | None, default=None)
    if stage == "fit":
        parser.add_argument("--test_after_fit", type=bool, default=False,
                            help="run trainer.test with the best checkpoint after fit")
    return parser


def run(argv: list[str]) -> int:
    stage, rest = argv[0], argv[1:]
    parser = build_parser(stage)
    if "--print_config" in rest:
        rest = [a for a in rest if a != "--print_config"]
        config = _parse(parser, rest, stage)
        if config is None:
            return 2
        print(parser.dump(config, skip_none=False), end="")
        return 0
    config = _parse(parser, rest, stage)
    if config is None:
        return 2
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
    kwargs: dict[str, Any] = {"datamodule": data, "ckpt_path": config.ckpt_path}
    if stage == "fit":
        trainer.fit(model, **kwargs)
        if config.test_after_fit:
            trainer.test(model, datamodule=data,
                         ckpt_path="best" if trainer.checkpoint_callback is not None and
                         trainer.checkpoint_callback.best_model_path else None)
    elif stage == "predict":
        trainer.predict(model, **kwargs)
    else:
        getattr(trainer, stage)(model, **kwargs)
    return 0


def _parse(parser: ArgumentParser, args: list[str], stage: str) -> Namespace | None:
    try:
        return parser.parse_args(args)
    except Exception as exc:  # jsonargparse names the key and what it expected
        print(f"fulmen {stage}: error: {exc}", file=sys.stderr)
        print(f"(fulmen {stage} --help lists every option)", file=sys.stderr)
        return None
