"""The predict loop: ``predict_step`` over every predict dataloader, under no_grad or inference
mode; the outputs are collected when asked for."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from fulmen.errors import ConfigurationError
from fulmen.trainer import data
from fulmen.trainer.batches import (
    batch_idx_as_taken,
    first_batches,
    make_transfer,
    no_grad,
    profiled_step,
    takes_dataloader_idx,
)

if TYPE_CHECKING:
    from fulmen.trainer.loop_host import LoopHost


class PredictionLoop:
    """Runs ``predict_step`` over the predict data (``trainer.predict``)."""

    def __init__(self, trainer: LoopHost) -> None:
        self.trainer = trainer

    def loaders(self, explicit: Any) -> tuple[list[Any], list[int | float]]:
        """The predict dataloaders, as the strategy prepares them, and their batch counts."""
        trainer = self.trainer
        found = data.resolve(explicit, trainer.datamodule, trainer.module, "predict")
        if not found:
            raise ConfigurationError("trainer.predict found no data: pass dataloaders=, a "
                                     "datamodule with predict_dataloader(), or define "
                                     "predict_dataloader()")
        found = [trainer.strategy.process_dataloader(d, "predict",
                                                     trainer.use_distributed_sampler)
                 for d in found]
        counts = [data.num_batches(d, trainer.limit_predict_batches, "predict") for d in found]
        if not any(counts) and trainer.limit_predict_batches != 0:
            warnings.warn(data.EMPTY_LOADERS, stacklevel=5)  # Lightning's, then it skips
        trainer.num_predict_batches = counts
        trainer.run_state.dataloaders["predict"] = found
        return found, counts

    def run(self, explicit: Any, return_predictions: bool = True) -> Any:
        """A list of outputs (one list per dataloader when there are several), or None."""
        trainer = self.trainer
        module, strategy, hooks = trainer.module, trainer.strategy, trainer.hooks
        assert module is not None and hooks is not None
        step = profiled_step(hooks.profiler, strategy.step)
        loaders, counts = self.loaders(explicit)
        if not any(counts):
            return None  # Lightning skips the stage
        module.on_predict_model_eval()
        transfer = make_transfer(trainer)
        all_outputs: list[list[Any]] = []
        # so that self.log can refuse
        results = trainer.metrics.current = trainer.metrics.new_results("predict")
        hooks("on_predict_start")
        run = trainer.run_state
        if run.data_changed:  # a trial in on_predict_start (a batch-size search) changed it
            loaders, counts = self.loaders(explicit)
            run.trials_seen = run.trials
        if module.predict_step is None:
            raise ConfigurationError("`predict_step` cannot be None to run `Trainer.predict`")
        pass_idx = len(loaders) > 1 and takes_dataloader_idx(module.predict_step)
        step = batch_idx_as_taken(step, module.predict_step, named=True)
        hooks("on_predict_epoch_start")
        with no_grad(trainer):
            for dl_idx, (loader, count) in enumerate(zip(loaders, counts)):
                outputs: list[Any] = []
                extra = (dl_idx,) if pass_idx else ()
                hook_idx = (dl_idx,) if len(loaders) > 1 else ()
                for batch_idx, batch in first_batches(loader, count):
                    if transfer is not None:
                        batch = transfer(batch, dl_idx)
                    hooks("on_predict_batch_start", batch, batch_idx, *hook_idx)
                    results.hook = "predict_step"
                    output = step("predict_step", batch, batch_idx, *extra)
                    hooks("on_predict_batch_end", output, batch, batch_idx, *hook_idx)
                    if return_predictions:
                        outputs.append(strategy.precision.convert_output(output))
                all_outputs.append(outputs)
        hooks("on_predict_epoch_end")
        hooks("on_predict_end")
        trainer.metrics.current = None
        if not return_predictions:
            return None
        return all_outputs[0] if len(all_outputs) == 1 else all_outputs
