"""The evaluation loop: ``validation_step`` (``trainer.validate``, validation inside fit and
the sanity check) or ``test_step`` (``trainer.test``) over every dataloader, under no_grad or
inference mode, with the modes of the model put back afterwards."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fulmen.errors import ConfigurationError
from fulmen.module import Module
from fulmen.status import configure_logging
from fulmen.trainer import data
from fulmen.trainer.batches import (
    batch_idx_as_taken,
    first_batches,
    make_transfer,
    no_grad,
    overridden,
    profiled_step,
    takes_dataloader_idx,
)

if TYPE_CHECKING:
    from fulmen.trainer.loop_host import LoopHost

Loaders = tuple[list[Any], list[int | float]]


class EvaluationLoop:
    """Runs ``validation_step`` or ``test_step`` over the evaluation data of one stage."""

    def __init__(self, trainer: LoopHost) -> None:
        self.trainer = trainer

    def step_defined(self, kind: str) -> bool:
        """The module has a ``validation_step``/``test_step`` (not None: Lightning's idiom
        ``model.validation_step = None`` turns validation inside fit off)."""
        module = self.trainer.module
        method = "validation_step" if kind == "val" else f"{kind}_step"
        return not (getattr(module, method) is None or (
            type(module).__dict__.get(method) is None and getattr(
                type(module), method) is getattr(Module, method)))

    def loaders(self, kind: str, explicit: Any, during_fit: bool = False) -> Loaders:
        """The ``kind`` (``"val"``/``"test"``) dataloaders, as the strategy prepares them, and
        their batch counts; none when the limit is 0 or (inside fit) nothing validates."""
        trainer = self.trainer
        module = trainer.module
        limit = getattr(trainer, f"limit_{kind}_batches")
        if limit == 0 or (during_fit and not self.step_defined(kind)):
            return [], []
        loaders = data.resolve(explicit, trainer.datamodule, module, kind)
        loaders = [trainer.strategy.process_dataloader(d, kind, trainer.use_distributed_sampler)
                   for d in loaders]
        for loader in loaders:
            data.seed_workers(loader, trainer.global_rank)
        counts = [data.num_batches(d, limit, kind) for d in loaders]
        if during_fit and loaders and not any(counts):
            warnings.warn(f"every {kind} dataloader is empty; validation is skipped",
                          stacklevel=3)
            return [], []
        if kind == "val":
            trainer.num_val_batches = counts
        else:
            trainer.num_test_batches = counts
        trainer.run_state.dataloaders[kind] = loaders
        return loaders, counts

    def run_stage(self, stage: str, loaders: dict[str, Any],
                  verbose: bool = True) -> list[dict[str, float]]:
        """``trainer.validate``/``trainer.test``: the data, checked, one run, the results table
        on rank zero; one dict of metrics per dataloader."""
        kind = "val" if stage == "validate" else "test"
        if getattr(self.trainer, f"limit_{kind}_batches") == 0:
            return []  # Lightning skips the stage

        def resolve() -> Loaders:
            found = self.loaders(kind, loaders.get(kind))
            if not found[0]:
                raise ConfigurationError(
                    f"trainer.{stage} found no {kind} data: pass dataloaders=, a datamodule "
                    f"with {data.METHODS[kind]}(), or define {data.METHODS[kind]}() on the "
                    "module")
            return found

        found = resolve()
        if not any(found[1]):  # Lightning warns and skips the stage
            warnings.warn(data.EMPTY_LOADERS, stacklevel=4)
            return []
        results = self.run(stage, *found, reload=resolve)
        if verbose and self.trainer.is_global_zero:
            print_results(stage, results)
        return results

    def run(self, stage: str, loaders: list[Any], counts: list[int | float],
            during_fit: bool = False, sanity: bool = False,
            reload: Callable[[], Loaders] | None = None) -> list[dict[str, float]]:
        """One evaluation run. ``reload``: sets the data up again when a trial in
        ``on_<stage>_start`` (a batch-size search) changed it."""
        trainer = self.trainer
        module, strategy, hooks = trainer.module, trainer.strategy, trainer.hooks
        assert module is not None and hooks is not None
        step = profiled_step(hooks.profiler, strategy.step)
        prefix = "validation" if stage == "validate" else "test"
        method = f"{prefix}_step"
        if getattr(module, method) is None:
            raise ConfigurationError(f"No `{method}()` method defined to run `Trainer.{stage}` "
                                     f"({type(module).__name__}.{method} is None)")
        if getattr(type(module), method) is getattr(Module, method):
            getattr(module, method)()  # raises the clear 'has no ..._step' error
        results = trainer.metrics.new_results("validate" if prefix == "validation" else "test")
        previous, trainer.metrics.current = trainer.metrics.current, results
        # The modes of what runs the steps: the strategy's wrapper too (ShardedDataParallel
        # reduces gradients only while it is in training mode), not only the user's module.
        root = trainer.model if trainer.model is not None else module
        modes = {m: m.training for m in root.modules()}
        model_hook = "on_test_model" if prefix == "test" else "on_validation_model"
        getattr(module, f"{model_hook}_eval")()
        transfer = make_transfer(trainer)
        hooks(f"on_{prefix}_start")
        run = trainer.run_state
        if reload is not None and run.data_changed:
            loaders, counts = reload()
            run.trials_seen = run.trials
        pass_idx = len(loaders) > 1 and takes_dataloader_idx(getattr(module, method))
        step = batch_idx_as_taken(step, getattr(module, method), named=True)
        hooks(f"on_{prefix}_epoch_start")
        # Lightning's step axis for evaluation values logged per batch: the batches each
        # dataloader ran in this fit (over every validation of it) or this validate/test call.
        counts_seen = trainer.metrics.eval_batches_seen
        with no_grad(trainer):
            for dl_idx, (loader, count) in enumerate(zip(loaders, counts)):
                results.dataloader_suffix = f"/dataloader_idx_{dl_idx}" if len(loaders) > 1 \
                    else ""
                extra = (dl_idx,) if pass_idx else ()
                hook_idx = (dl_idx,) if len(loaders) > 1 else ()  # Lightning passes it only then
                for batch_idx, batch in first_batches(loader, count):
                    if transfer is not None:
                        batch = transfer(batch, dl_idx)
                    results.batch = batch
                    hooks(f"on_{prefix}_batch_start", batch, batch_idx, *hook_idx)
                    results.hook = method
                    output = step(method, batch, batch_idx, *extra)
                    hooks(f"on_{prefix}_batch_end", output, batch, batch_idx, *hook_idx)
                    seen = counts_seen.get((prefix, dl_idx), 0)
                    if results.step_values:  # someone logged with on_step=True
                        if not sanity:
                            trainer.metrics.log_eval_step(results, seen)
                        results.step_values.clear()
                    if not sanity:
                        counts_seen[(prefix, dl_idx)] = seen + 1
        results.dataloader_suffix = ""
        # Lightning's order: the epoch values of the steps are computed before the epoch-end
        # hooks (they read them in callback_metrics); what those hooks log is added after them
        metrics = trainer.metrics
        if sanity:
            finished = metrics.sanity_values = _epoch_values(results)
        else:
            finished = metrics.finish(results, log=False)
        hooks.before_monitors(f"on_{prefix}_epoch_end")
        if sanity:
            finished = metrics.sanity_values = {**finished, **_epoch_values(results)}
        else:
            finished = {**finished, **metrics.finish(results)}
        hooks.monitors(f"on_{prefix}_epoch_end")
        hooks(f"on_{prefix}_end")
        metrics.sanity_values = {}
        run.last_val_time = time.monotonic()  # the clock of val_check_interval as a duration
        trainer.metrics.current = previous
        if overridden(module, f"{model_hook}_train"):
            getattr(module, f"{model_hook}_train")()
        else:
            for submodule, mode in modes.items():
                submodule.training = mode
        return _split_by_loader(finished, len(loaders))


def _epoch_values(results: Any) -> dict[str, torch.Tensor]:
    return {name: value for name, (_, value) in results.epoch_values().items()}


def _split_by_loader(metrics: dict[str, torch.Tensor], n: int) -> list[dict[str, float]]:
    out: list[dict[str, float]] = [{} for _ in range(n)]
    for name, value in metrics.items():
        _, _, idx = name.partition("/dataloader_idx_")
        targets = [int(idx)] if idx.isdigit() else range(n)
        for i in targets:
            out[i][name] = float(value)
    return out


def print_results(stage: str, results: list[dict[str, float]]) -> None:
    """The results table on rank zero, through the ``fulmen`` logger."""
    for i, metrics in enumerate(results):
        title = f"{stage.capitalize()} results" + (f" (dataloader {i})" if len(results) > 1 else "")
        width = max([len(k) for k in metrics] + [len("metric")])
        rule = "-" * (width + 18)
        lines = [rule, title, rule, f"{'metric':<{width}}  {'value':>14}"]
        lines += [f"{name:<{width}}  {metrics[name]:>14.6g}" for name in sorted(metrics)]
        configure_logging().info("%s", "\n".join([*lines, rule]))
