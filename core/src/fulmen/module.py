"""``fulmen.Module``: a ``torch.nn.Module`` that knows how to train itself with a Trainer.

Write ``training_step`` and ``configure_optimizers`` (and ``validation_step`` /
``test_step`` / ``predict_step`` as needed); override any hook below to run code at that point.
Nothing here touches a device, a process group or a precision: the Trainer's plugins do.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import torch

from fulmen.errors import ConfigurationError, FulmenDeprecationWarning, FulmenError
from fulmen.hparams import (
    AttributeDict,
    HasHyperparameters,
    as_mapping,
    container_name,
    init_arguments,
    select,
)
from fulmen.utilities.rank_zero import WarningCache, rank_zero_deprecation, rank_zero_warn

if TYPE_CHECKING:
    from fulmen.api.lite_view import LiteView
    from fulmen.api.trainer_view import TrainerView

_LOG_OPTIONS = WarningCache()


class Hooks:
    """Every hook a Module, DataModule-driven loop or Callback-style user code can override.

    Each does nothing by default. The Trainer calls only the hooks a module overrides.
    """

    def on_fit_start(self) -> None: ...
    def on_fit_end(self) -> None: ...
    def on_train_start(self) -> None: ...
    def on_train_end(self) -> None: ...
    def on_train_epoch_start(self) -> None: ...
    def on_train_epoch_end(self) -> None: ...
    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None: ...
    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None: ...
    def on_validation_start(self) -> None: ...
    def on_validation_end(self) -> None: ...
    def on_validation_epoch_start(self) -> None: ...
    def on_validation_epoch_end(self) -> None: ...
    def on_validation_batch_start(self, batch: Any, batch_idx: int,
                                  dataloader_idx: int = 0) -> None: ...
    def on_validation_batch_end(self, outputs: Any, batch: Any, batch_idx: int,
                                dataloader_idx: int = 0) -> None: ...
    def on_test_start(self) -> None: ...
    def on_test_end(self) -> None: ...
    def on_test_epoch_start(self) -> None: ...
    def on_test_epoch_end(self) -> None: ...
    def on_test_batch_start(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_test_batch_end(self, outputs: Any, batch: Any, batch_idx: int,
                          dataloader_idx: int = 0) -> None: ...
    def on_predict_start(self) -> None: ...
    def on_predict_end(self) -> None: ...
    def on_predict_epoch_start(self) -> None: ...
    def on_predict_epoch_end(self) -> None: ...
    def on_predict_batch_start(self, batch: Any, batch_idx: int,
                               dataloader_idx: int = 0) -> None: ...
    def on_predict_batch_end(self, outputs: Any, batch: Any, batch_idx: int,
                             dataloader_idx: int = 0) -> None: ...
    def on_before_backward(self, loss: torch.Tensor) -> None: ...
    def on_after_backward(self) -> None: ...
    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_before_zero_grad(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None: ...
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None: ...
    def setup(self, stage: str) -> None: ...
    def teardown(self, stage: str) -> None: ...
    def configure_model(self) -> None:
        """Create layers here to build them on the device (or sharded); runs before
        ``configure_optimizers`` in every stage, so make it idempotent."""


_WARNED = WarningCache()


def _early_hparams(module: Module) -> None:
    """``save_hyperparameters()`` ran before ``super().__init__()``: the hyper-parameters are
    kept (checkpoints, ``load_from_checkpoint``) but, as in Lightning (whose base ``__init__``
    resets the flag), not sent to the loggers; warned once per class with the fix."""
    if module._log_hyperparams:
        _WARNED.warn(
            f"{type(module).__name__}.save_hyperparameters() was called before "
            "super().__init__(): as in Lightning, the hyper-parameters are saved in checkpoints "
            "but not sent to the loggers. Call save_hyperparameters() after super().__init__() "
            "to log them too.", stacklevel=7)
    module._log_hyperparams = False


@contextlib.contextmanager
def jit_tracing() -> Iterator[None]:
    """Inside, ``torch.jit`` may trace or script a :class:`Module` that no Trainer holds (its
    attribute walk reads ``trainer``, which is then None), as Lightning's ``_jit_is_scripting``
    does; ``TensorBoardLogger.log_graph`` traces under it."""
    before, Module._jit_is_scripting = Module._jit_is_scripting, True
    try:
        yield
    finally:
        Module._jit_is_scripting = before


class Module(Hooks, HasHyperparameters, torch.nn.Module):
    """Base class for models trained by ``fulmen.Trainer``."""

    prepare_data_per_node: bool = True
    #: FLOPs of one training batch (forward and backward), for ``ThroughputMonitor``'s FLOPs/s
    #: and MFU; set it (e.g. with ``fulmen.utilities.measure_flops``) or define a property.
    flops_per_batch: int | None = None
    #: An input for ``forward`` (a tensor, a tuple/list of positional arguments or a dict of
    #: keyword arguments); when set, ``ModelSummary`` shows each layer's in/out sizes and FLOPs.
    example_input_array: Any = None
    #: How ``load_from_checkpoint`` passes the saved hyper-parameters back (Lightning's
    #: ``_hparams_name``, saved under ``CHECKPOINT_HYPER_PARAMS_NAME``): the ``__init__``
    #: argument that held the dict/Namespace ``save_hyperparameters(container)`` saved, else
    #: ``"kwargs"`` (each as its own argument); None when nothing was saved.
    hparams_name: str | None = None
    #: Where checkpoints keep the hyper-parameters, the ``hparams_name`` and (Lightning, for
    #: OmegaConf containers) their type: Lightning's keys
    CHECKPOINT_HYPER_PARAMS_KEY = "hyper_parameters"
    CHECKPOINT_HYPER_PARAMS_NAME = "hparams_name"
    CHECKPOINT_HYPER_PARAMS_TYPE = "hparams_type"
    #: True while ``torch.jit`` walks the module's attributes (:func:`jit_tracing`): ``trainer``
    #: is then None instead of an error on a module not attached to a Trainer
    _jit_is_scripting: bool = False
    #: what :attr:`strict_loading` was set to (None: not set, which is strict)
    _strict_loading: bool | None = None
    #: a weak reference to the Lite that set this module up, or None: :attr:`lite`
    _lite_ref: Callable[[], LiteView | None] | None = None
    #: What ``torch.jit.script`` leaves out of a script module (``to_torchscript``, as
    #: Lightning's lists): the attributes annotated on this class and its bases, whose
    #: annotations (strings here) TorchScript cannot read once an instance sets them, and the
    #: properties, which it would compile (:func:`_jit_ignored`)
    __jit_ignored_attributes__: list[str] = []
    __jit_unused_properties__: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._trainer: TrainerView | None = None
        #: the optimizers ``lite.setup(module, *optimizers)`` returned (``optimizers()``
        #: under Lite, Fabric's ``_fabric_optimizers``)
        self.lite_optimizers: list[Any] = []
        if "_hparams" in self.__dict__:  # save_hyperparameters() ran before this __init__
            _early_hparams(self)
        else:
            self._hparams: AttributeDict = AttributeDict()
            self._hparams_initial: AttributeDict = AttributeDict()
        self.automatic_optimization: bool = True
        self._param_requires_grad_state: dict[torch.nn.Parameter, bool] = {}
        #: the dtype and device this module was last cast/moved to (Lightning's
        #: ``_DeviceDtypeModuleMixin`` attributes): see :attr:`dtype` and :attr:`device`
        self._dtype: torch.dtype | str = torch.get_default_dtype()
        self._device: torch.device = torch.get_default_device()

    # ------------------------------------------------------------------ where it runs

    @property
    def trainer(self) -> TrainerView:
        """The Trainer running this module, seen through its public members
        (:class:`fulmen.api.trainer_view.TrainerView`). Under :attr:`lite` without a Trainer,
        an object whose attributes are the Lite's (Fabric's ``_TrainerFabricShim``)."""
        if self._trainer is None:
            if self._lite is not None:
                return LiteTrainerShim(self._lite)
            if Module._jit_is_scripting:
                return None  # type: ignore[return-value]
            raise FulmenError(f"{type(self).__name__} is not attached to a Trainer; it is "
                              "attached by trainer.fit/validate/test/predict")
        return self._trainer

    @trainer.setter
    def trainer(self, trainer: TrainerView | None) -> None:
        self._trainer = trainer

    @property
    def lite(self) -> LiteView | None:
        """The ``fulmen.Lite`` that set this module up (``lite.setup(module, ...)``), or None.
        Without a Trainer, ``self.log``/``log_dict``, ``logger``/``loggers``, ``optimizers()``,
        ``backward``/``manual_backward``, ``clip_gradients``, ``all_gather`` and the ranks go
        through it, as a ``LightningModule``'s go through Fabric. Set on every ``Module``
        inside this one too, and kept as a weak reference (None once that Lite is gone)."""
        return self._lite

    @lite.setter
    def lite(self, lite: LiteView | None) -> None:
        import weakref

        for child in self.children():
            if isinstance(child, Module):
                child.lite = lite
        self._lite_ref = weakref.ref(lite) if lite is not None else None

    @property
    def _lite(self) -> LiteView | None:
        ref = self._lite_ref
        return ref() if ref is not None else None

    def __getstate__(self) -> dict[str, Any]:
        """A copy or pickle of the module is not attached to the Lite that set this one up
        (``copy.deepcopy(model)`` for an EMA copies the weights, not the Lite)."""
        state = dict(self.__dict__)
        state.pop("_lite_ref", None)
        state["lite_optimizers"] = []
        return state

    @property
    def fabric(self) -> LiteView | None:
        """Lightning's name for :attr:`lite`."""
        return self.lite

    @fabric.setter
    def fabric(self, lite: LiteView | None) -> None:
        self.lite = lite

    @property
    def device_mesh(self) -> Any:
        """The strategy's ``DeviceMesh`` (``strategy="model_parallel"``), for ``configure_model``
        to apply ``parallelize_module`` / ``fully_shard`` on; None without one."""
        return None if self._trainer is None else self._trainer.strategy.device_mesh

    @property
    def device(self) -> torch.device:
        """Where the parameters (or buffers) live; for a module without any, the device it was
        last moved to (``.to()``, ``.cuda()``, ``.cpu()``; at first the default device), as
        Lightning's ``_device``. A CUDA device always has its index."""
        for param in self.parameters():
            return param.device
        for buffer in self.buffers():
            return buffer.device
        device = self._device
        if device.type == "cuda" and device.index is None:
            return torch.device("cuda", torch.cuda.current_device())
        return device

    @property
    def on_gpu(self) -> bool:
        """Whether the module is on a CUDA device (Lightning's ``on_gpu``)."""
        return self.device.type == "cuda"

    @property
    def dtype(self) -> torch.dtype | str:
        """The dtype this module was last cast to (``.to(dtype)``, ``.type()``, ``.float()``,
        ``.double()``, ``.half()``, which also set it on every ``Module`` inside); at first
        the default dtype. Lightning's ``dtype`` (its ``_dtype`` attribute holds the same):
        integer buffers and parameters created with another dtype do not change it."""
        return self._dtype

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """``torch.nn.Module.to``, recording the target device and dtype (:attr:`dtype`)."""
        _record_cast(self, **_to_target(args, kwargs))
        return super().to(*args, **kwargs)

    def cuda(self, device: torch.device | int | None = None) -> Self:
        """``torch.nn.Module.cuda``, recording the device (the current one when None)."""
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        elif isinstance(device, int):
            device = torch.device("cuda", index=device)
        _record_cast(self, device=device)
        return super().cuda(device=device)

    def cpu(self) -> Self:
        """``torch.nn.Module.cpu``, recording the device."""
        _record_cast(self, device=torch.device("cpu"))
        return super().cpu()

    def type(self, dst_type: torch.dtype | str) -> Self:
        """``torch.nn.Module.type``, recording the dtype."""
        _record_cast(self, dtype=dst_type)
        return super().type(dst_type=dst_type)

    def float(self) -> Self:
        """``torch.nn.Module.float``, recording the dtype."""
        _record_cast(self, dtype=torch.float)
        return super().float()

    def double(self) -> Self:
        """``torch.nn.Module.double``, recording the dtype."""
        _record_cast(self, dtype=torch.double)
        return super().double()

    def half(self) -> Self:
        """``torch.nn.Module.half``, recording the dtype."""
        _record_cast(self, dtype=torch.half)
        return super().half()

    @property
    def global_rank(self) -> int:
        runner = self._trainer if self._trainer is not None else self._lite
        return runner.global_rank if runner is not None else 0

    @property
    def local_rank(self) -> int:
        runner = self._trainer if self._trainer is not None else self._lite
        return runner.local_rank if runner is not None else 0

    @property
    def current_epoch(self) -> int:
        return self._trainer.current_epoch if self._trainer is not None else 0

    @property
    def global_step(self) -> int:
        return self._trainer.global_step if self._trainer is not None else 0

    def print(self, *args: Any, **kwargs: Any) -> None:
        """``print`` on global rank zero only."""
        if self.global_rank == 0:
            print(*args, **kwargs)

    # ------------------------------------------------------------------ hyper-parameters

    def save_hyperparameters(self, *names: Any, ignore: str | list[str] | None = None,
                             frame: types.FrameType | None = None, logger: bool = True) -> None:
        """Record ``__init__`` arguments (all, or those named) in ``self.hparams``; they are
        written to checkpoints (modules and partials as re-creatable references) and, unless
        ``logger=False``, sent to the loggers (``hparams.yaml``). One dict or
        ``argparse.Namespace`` argument is saved as the hyper-parameters instead. ``frame``:
        the ``__init__`` frame to read the arguments from (default: the caller's). May run
        before ``super().__init__()``, as in Lightning. Names in ``ignore`` are also dropped
        from what an earlier call (a base class's) saved."""
        self._log_hyperparams = logger
        if len(names) == 1 and not names[0]:  # an empty container: nothing to save
            return
        ignore = [ignore] if isinstance(ignore, str) else \
            [i for i in (ignore or []) if isinstance(i, str)]
        if frame is None:
            current = inspect.currentframe()
            assert current is not None and current.f_back is not None
            frame = current.f_back
        arguments = init_arguments(frame, self)
        if len(names) == 1 and not isinstance(names[0], str):
            chosen = {k: v for k, v in as_mapping(names[0]).items() if k not in ignore}
            # the __init__ argument that held the container gets it back on loading
            self.hparams_name = container_name(arguments, names[0], ignore)
        else:
            chosen = select(arguments, names, ignore)
            self.hparams_name = "kwargs" if chosen or names else None
        if "_hparams" not in self.__dict__:  # before super().__init__()
            self._hparams, self._hparams_initial = AttributeDict(), AttributeDict()
        for store in (self._hparams, self._hparams_initial):
            store.update(chosen)
            for key in ignore:  # a subclass may drop what its base class saved
                store.pop(key, None)

    @property
    def hparams(self) -> AttributeDict:
        return self._hparams

    @property
    def hparams_initial(self) -> AttributeDict:
        return AttributeDict(self._hparams_initial)

    # ------------------------------------------------------------------ steps (override)

    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(f"{type(self).__name__} has no training_step; Trainer.fit "
                                 "needs one that returns the loss")

    def validation_step(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(f"{type(self).__name__} has no validation_step")

    def test_step(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(f"{type(self).__name__} has no test_step; Trainer.test "
                                 "needs one")

    def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
        """Default: ``self(batch)`` (or ``self(*batch)`` for a tuple/list of inputs)."""
        if isinstance(batch, list | tuple):
            return self(*batch)
        return self(batch)

    def training_step_end(self, step_output: Any) -> Any:
        """Under ``dp``/``ddp2``: the outputs of every GPU's part of the batch, gathered;
        return the reduced output (the loss). Other strategies never call it."""
        return step_output

    def validation_step_end(self, step_output: Any) -> Any:
        """Like ``training_step_end``, for validation."""
        return step_output

    def test_step_end(self, step_output: Any) -> Any:
        """Like ``training_step_end``, for testing."""
        return step_output

    def configure_optimizers(self) -> Any:
        raise ConfigurationError(
            f"{type(self).__name__} has no configure_optimizers; return an optimizer, a list of "
            "them, (optimizers, schedulers), or {'optimizer': ..., 'lr_scheduler': ...}")

    def configure_callbacks(self) -> Any:
        """Callbacks this module always needs (added to the Trainer's)."""
        return []

    def prepare_data(self) -> None:
        """Download or write data to disk: once per node (``prepare_data_per_node = False``:
        once per job), before ``setup``; not on every process, so set no state here."""

    # ------------------------------------------------------------------ train/eval mode

    def on_validation_model_zero_grad(self) -> None:
        """Before validation inside fit: release the gradients."""
        self.zero_grad()

    def on_validation_model_eval(self) -> None:
        """Validation starts: ``.eval()`` the model (override to keep some layers training)."""
        self._run_model().eval()

    def on_validation_model_train(self) -> None:
        """Validation ends. Called only when overridden: by default each submodule gets back
        the training mode it had before validation."""
        self._run_model().train()

    def on_test_model_eval(self) -> None:
        self._run_model().eval()

    def on_test_model_train(self) -> None:
        """Called only when overridden (like ``on_validation_model_train``)."""
        self._run_model().train()

    def on_predict_model_eval(self) -> None:
        self._run_model().eval()

    def _run_model(self) -> torch.nn.Module:
        model = self._trainer.model if self._trainer is not None else None
        return model if model is not None else self

    # ------------------------------------------------------------------ optimization hooks

    def optimizer_step(self, epoch: int, batch_idx: int, optimizer: Any,
                       optimizer_closure: Callable[[], Any] | None = None) -> None:
        """Step the optimizer. ``optimizer_closure`` runs ``training_step``, zero-grad and
        backward; pass it to ``optimizer.step(closure=...)`` (it must run exactly once)."""
        optimizer.step(closure=optimizer_closure)

    def optimizer_zero_grad(self, epoch: int, batch_idx: int, optimizer: Any) -> None:
        """Reset the gradients before the backward of a new accumulation window."""
        optimizer.zero_grad()

    def lr_scheduler_step(self, scheduler: Any, metric: Any) -> None:
        """Step one scheduler; ``metric`` is the monitored value (ReduceLROnPlateau) or None."""
        if metric is None:
            scheduler.step()
        else:
            scheduler.step(metric)

    def configure_gradient_clipping(self, optimizer: Any,
                                    gradient_clip_val: int | builtins.float | None = None,
                                    gradient_clip_algorithm: str | None = None) -> None:
        """Clip before each optimizer step; receives the Trainer's clipping flags."""
        self.clip_gradients(optimizer, gradient_clip_val=gradient_clip_val,
                            gradient_clip_algorithm=gradient_clip_algorithm)

    # ------------------------------------------------------------------ batches

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        return batch

    def transfer_batch_to_device(self, batch: Any, device: torch.device,
                                 dataloader_idx: int) -> Any:
        """Move a batch to ``device``; override for custom batch types."""
        from fulmen.apply import apply_to_tensors

        return apply_to_tensors(batch, lambda t: t.to(device, non_blocking=True))

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        return batch

    # ------------------------------------------------------------------ logging

    def log(self, name: str, value: Any, prog_bar: bool = False, logger: bool | None = None,
            on_step: bool | None = None, on_epoch: bool | None = None, reduce_fx: Any = "mean",
            enable_graph: bool = False, sync_dist: bool = False, sync_dist_group: Any = None,
            add_dataloader_idx: bool = True, batch_size: int | None = None,
            metric_attribute: str | None = None, rank_zero_only: bool = False) -> None:
        """Record a metric for the progress bar, the logger and callbacks (``monitor=``).

        Defaults follow the hook: per step in ``training_step`` and the train batch hooks,
        per epoch (weighted mean over batches) in validation/test and epoch hooks. Logged per
        step and per epoch, the names get ``_step``/``_epoch``; with several val/test
        dataloaders, ``/dataloader_idx_<i>`` is appended (``add_dataloader_idx=False``: not,
        and the dataloaders' values are reduced together). ``sync_dist_group`` and
        ``metric_attribute`` are accepted for Lightning code: the group is always every
        process, and Metric objects are found without the attribute name.
        """
        trainer = self._trainer
        if trainer is None:
            if self._lite is not None:
                self._log_through_lite({name: value}, logger)
                return
            # a warning, so that *_step methods can be tested alone (Lightning)
            rank_zero_warn(f"You are trying to `self.log()` ({name!r}) but the `self.trainer` "
                           "reference is not registered on the model yet. This is most likely "
                           "because the model hasn't been passed to the `Trainer`: nothing is "
                           "logged", stacklevel=3)
            return
        if trainer.barebones:
            rank_zero_warn("You are trying to `self.log()` but `Trainer(barebones=True)` is "
                           "configured. Logging can impact raw speed so it is disabled under "
                           "this setting.", stacklevel=3)
            return
        results = trainer.metrics.current
        if results is None:
            raise FulmenError(f"self.log({name!r}, ...) was called outside a Trainer hook; "
                              "log from training_step, validation_step, test_step or hooks")
        if enable_graph or sync_dist_group is not None:  # Lightning honours them: a warning
            _LOG_OPTIONS.warn(f"self.log({name!r}, enable_graph={enable_graph!r}, "
                              f"sync_dist_group={sync_dist_group!r}): fulmen stores logged values "
                              "detached and reduces sync_dist over every process; keep the "
                              "tensor yourself if you need its graph, and leave sync_dist_group="
                              "None", category=UserWarning)
        if not results.log_step_value(name, value):  # not the usual per-step scalar
            results.log(name, value, prog_bar, logger is not False, on_step, on_epoch, reduce_fx,
                        sync_dist, rank_zero_only, batch_size, add_dataloader_idx)

    def log_dict(self, dictionary: Mapping[str, Any], **kwargs: Any) -> None:
        """``self.log`` for every item of ``dictionary`` with the same options (under
        :attr:`lite`: one ``lite.log_dict`` call)."""
        if self._trainer is None and self._lite is not None:
            self._log_through_lite(dictionary, kwargs.get("logger"))
            return
        for name, value in dictionary.items():
            self.log(name, value, **kwargs)

    def _log_through_lite(self, dictionary: Mapping[str, Any], logger: bool | None) -> None:
        """``self.log``/``log_dict`` under :attr:`lite`: the values go to ``lite.log_dict``
        (Lightning's ``_log_dict_through_fabric``; the Trainer's options do not apply, and
        ``logger=False`` logs nothing, there being nowhere else to send them)."""
        import numbers

        if logger is False:
            return
        for name, value in dictionary.items():
            if isinstance(value, dict):
                raise ConfigurationError(f"`self.log_dict({dict(dictionary)})` was called, but "
                                         "nested dictionaries cannot be logged")
            if not isinstance(value, numbers.Number | torch.Tensor):
                raise ConfigurationError(f"`self.log({name}, {value})` was called, but "
                                         f"`{type(value).__name__}` values cannot be logged: "
                                         "log a number or a scalar tensor")
        assert self._lite is not None
        self._lite.log_dict(dictionary)

    # ------------------------------------------------------------------ collectives

    def all_gather(self, data: Any, sync_grads: bool = False) -> Any:
        """Gather tensors (or nested collections of them) from every process."""
        from fulmen.apply import apply_to_tensors

        if self._trainer is None:
            return data if self._lite is None else self._lite.all_gather(data, sync_grads)
        strategy = self._trainer.strategy
        if isinstance(data, list) and data and all(isinstance(t, torch.Tensor) for t in data):
            data = torch.stack(data)
        return apply_to_tensors(data, lambda t: strategy.all_gather(t, sync_grads=sync_grads))

    # ------------------------------------------------------------------ manual optimization

    def optimizers(self, use_wrapper: bool = True) -> Any:
        """The optimizer(s) from ``configure_optimizers`` (under :attr:`lite`: those
        ``lite.setup`` returned); a single one is returned alone."""
        if self._trainer is None and self._lite is not None:
            opts = self.lite_optimizers
            return opts[0] if len(opts) == 1 else list(opts)
        opts = self.trainer.optimization.for_user(use_wrapper)
        return opts[0] if len(opts) == 1 else opts

    def lr_schedulers(self) -> Any:
        """The scheduler(s) from ``configure_optimizers`` (None if there are none)."""
        schedulers = [c.scheduler for c in self.trainer.lr_scheduler_configs]
        if not schedulers:
            return None
        return schedulers[0] if len(schedulers) == 1 else schedulers

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Run backward on ``loss`` (already scaled under ``16-mixed``); override for a custom
        backward, e.g. ``loss.backward(retain_graph=True)``. The Trainer calls it through the
        strategy and precision, from the training step and from ``manual_backward``
        (DeepSpeed's engine runs its own backward and ignores an override, with a warning).
        Under :attr:`lite` without a Trainer: ``lite.backward(loss)``."""
        if self._trainer is None and self._lite is not None:
            self._lite.backward(loss, *args, **kwargs)
            return
        loss.backward(*args, **kwargs)

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """``loss.backward()`` through the strategy and precision (use with
        ``automatic_optimization = False``); under :attr:`lite`: ``lite.backward(loss)``."""
        if self._trainer is None and self._lite is not None:
            self._lite.backward(loss, *args, **kwargs)
            return
        self.trainer.optimization.backward(loss, *args, **kwargs)

    def clip_gradients(self, optimizer: Any, gradient_clip_val: int | builtins.float | None = None,
                       gradient_clip_algorithm: str | None = None) -> None:
        """Clip the gradients of ``optimizer``'s parameters (``"norm"`` or ``"value"``).

        Unset arguments take the Trainer's ``gradient_clip_val``/``gradient_clip_algorithm``;
        a value that contradicts the Trainer's is an error. Under :attr:`lite` without a
        Trainer: ``lite.clip_gradients`` (``clip_val=`` for ``"value"``, ``max_norm=`` for
        ``"norm"``, the default), as Lightning does with Fabric."""
        if self._trainer is None and self._lite is not None:
            by_value = gradient_clip_algorithm == "value"
            self._lite.clip_gradients(self, optimizer,
                                      clip_val=gradient_clip_val if by_value else None,
                                      max_norm=None if by_value else gradient_clip_val)
            return
        trainer = self.trainer
        if gradient_clip_val is None:
            gradient_clip_val = trainer.gradient_clip_val or 0.0
        elif trainer.gradient_clip_val is not None and \
                trainer.gradient_clip_val != gradient_clip_val:
            raise ConfigurationError(
                f"clip_gradients(gradient_clip_val={gradient_clip_val!r}) contradicts Trainer("
                f"gradient_clip_val={trainer.gradient_clip_val!r}); set it in one place")
        if gradient_clip_algorithm is None:
            gradient_clip_algorithm = trainer.gradient_clip_algorithm or "norm"
        elif trainer.gradient_clip_algorithm is not None and \
                trainer.gradient_clip_algorithm != gradient_clip_algorithm:
            raise ConfigurationError(
                f"clip_gradients(gradient_clip_algorithm={gradient_clip_algorithm!r}) "
                f"contradicts Trainer(gradient_clip_algorithm="
                f"{trainer.gradient_clip_algorithm!r}); set it in one place")
        if isinstance(gradient_clip_val, bool) or not isinstance(gradient_clip_val, int | float):
            raise ConfigurationError(f"clip_gradients(gradient_clip_val={gradient_clip_val!r}): "
                                     "expected an int or a float")
        if gradient_clip_algorithm not in ("norm", "value"):
            raise ConfigurationError(f"clip_gradients(gradient_clip_algorithm="
                                     f"{gradient_clip_algorithm!r}): use 'norm' or 'value'")
        if gradient_clip_val <= 0:
            return
        from fulmen.trainer.optim import OptimizerWrapper

        if isinstance(optimizer, OptimizerWrapper):
            optimizer = optimizer.optimizer
        trainer.strategy.clip_gradients(self, optimizer, gradient_clip_val,
                                        gradient_clip_algorithm)

    def toggle_optimizer(self, optimizer: Any) -> None:
        """Only ``optimizer``'s parameters require grad until ``untoggle_optimizer`` (for
        several optimizers over parts of the model, e.g. a GAN)."""
        from fulmen.trainer.optim import OptimizerWrapper

        if isinstance(optimizer, OptimizerWrapper):
            optimizer = optimizer.optimizer
        state: dict[torch.nn.Parameter, bool] = {}
        for opt in self.trainer.optimizers:
            for group in opt.param_groups:
                for param in group["params"]:
                    if param not in state:
                        state[param] = param.requires_grad
                        param.requires_grad = False
        for group in optimizer.param_groups:
            for param in group["params"]:
                param.requires_grad = state[param]
        self._param_requires_grad_state = state

    def untoggle_optimizer(self, optimizer: Any) -> None:
        """Give back the ``requires_grad`` flags ``toggle_optimizer`` changed."""
        for param, flag in self._param_requires_grad_state.items():
            param.requires_grad = flag
        self._param_requires_grad_state = {}

    @contextlib.contextmanager
    def toggled_optimizer(self, optimizer: Any) -> Iterator[None]:
        """``toggle_optimizer`` for the ``with`` block, then ``untoggle_optimizer``."""
        self.toggle_optimizer(optimizer)
        try:
            yield
        finally:
            self.untoggle_optimizer(optimizer)

    @property
    def logger(self) -> Any:
        """The Trainer's (or :attr:`lite`'s) first logger (None without one)."""
        runner = self._trainer if self._trainer is not None else self._lite
        return runner.logger if runner is not None else None

    @property
    def loggers(self) -> list[Any]:
        """Every logger of the Trainer (or of :attr:`lite`)."""
        runner = self._trainer if self._trainer is not None else self._lite
        return list(runner.loggers) if runner is not None else []

    # ------------------------------------------------------------------ utilities

    # ------------------------------------------------------------------ export

    def to_onnx(self, file_path: str | Path | Any = None, input_sample: Any = None,
                **kwargs: Any) -> Any:
        """Export the module to ONNX with ``torch.onnx.export`` (Lightning's ``to_onnx``):
        ``input_sample`` (default: :attr:`example_input_array`) goes through the batch-transfer
        hooks to the module's device first; ``file_path`` a path or a file object (None: no
        file); ``kwargs`` go to ``torch.onnx.export``, whose return value this returns. The
        training mode is restored afterwards. Needs the ``onnx`` package, and ``onnxscript``
        for ``dynamo=True`` (``torch.onnx.export``'s default from torch 2.9)."""
        import importlib.util

        from fulmen.errors import MissingDependencyError

        if importlib.util.find_spec("onnx") is None:
            raise MissingDependencyError(
                f"`{type(self).__name__}.to_onnx()` requires `onnx` to be installed: "
                "pip install onnx")
        # torch's exporter default (dynamo=True from torch 2.9 on) counts too: Lightning
        # checks an explicit dynamo=True only, and torch then fails importing onnxscript
        exporter = inspect.signature(torch.onnx.export).parameters
        dynamo = kwargs.get("dynamo", exporter["dynamo"].default if "dynamo" in exporter
                            else False)
        if dynamo and importlib.util.find_spec("onnxscript") is None:
            raise MissingDependencyError(
                f"`{type(self).__name__}.to_onnx(dynamo=True)` requires `onnxscript` and "
                "`torch>=2.5.0` to be installed (dynamo=True is torch.onnx.export's default "
                "from torch 2.9): pip install onnxscript, or pass dynamo=False")
        mode = self.training
        if input_sample is None:
            if self.example_input_array is None:
                raise ConfigurationError(
                    "Could not export to ONNX since neither `input_sample` nor "
                    "`model.example_input_array` attribute is set.")
            input_sample = self.example_input_array
        input_sample = self._export_input(input_sample)
        file_path = str(file_path) if isinstance(file_path, Path) else file_path
        exported = torch.onnx.export(self, input_sample, file_path, **kwargs)
        self.train(mode)
        return exported

    @torch.no_grad()
    def to_torchscript(self, file_path: str | Path | None = None, method: str | None = "script",
                       example_inputs: Any = None, **kwargs: Any) -> Any:
        """The module as a ``torch.jit.ScriptModule`` (Lightning's ``to_torchscript``):
        ``method="script"`` (``torch.jit.script``) or ``"trace"`` (``torch.jit.trace`` on
        ``example_inputs``, default :attr:`example_input_array`, moved by the batch-transfer
        hooks, as is ``check_inputs``); in eval mode, the training mode restored afterwards;
        saved to ``file_path`` (a path or fsspec URL) when given. ``kwargs`` go to
        ``torch.jit.script``/``trace``. Deprecated, as in Lightning 2.6.6: TorchScript is
        deprecated in PyTorch; use ``torch.export.export()``."""
        from fulmen import storage

        rank_zero_deprecation(
            "`Module.to_torchscript` is deprecated (as `LightningModule.to_torchscript` in "
            "Lightning 2.6.6): TorchScript is deprecated in PyTorch. Use "
            "`torch.export.export()` for model exporting instead. See "
            "https://pytorch.org/docs/stable/export.html for more information.",
            stacklevel=7, category=FulmenDeprecationWarning)
        mode = self.training
        if method == "script":
            with jit_tracing():
                scripted = torch.jit.script(self.eval(), **kwargs)
        elif method == "trace":
            if example_inputs is None:
                if self.example_input_array is None:
                    raise ConfigurationError(
                        "Choosing method=`trace` requires either `example_inputs` or "
                        "`model.example_input_array` to be defined.")
                example_inputs = self.example_input_array
            if kwargs.get("check_inputs") is not None:
                kwargs["check_inputs"] = self._export_input(kwargs["check_inputs"])
            example_inputs = self._export_input(example_inputs)
            with jit_tracing():
                scripted = torch.jit.trace(func=self.eval(), example_inputs=example_inputs,
                                           **kwargs)
        else:
            raise ConfigurationError(f"The 'method' parameter only supports 'script' or "
                                     f"'trace', but value given was: {method}")
        self.train(mode)
        if file_path is not None:
            with storage.open_file(str(file_path), "wb") as handle:
                torch.jit.save(scripted, handle)
        return scripted

    def _export_input(self, sample: Any) -> Any:
        """An export's input through ``on_before_batch_transfer``, ``transfer_batch_to_device``
        (to the module's device) and ``on_after_batch_transfer`` (dataloader 0): the
        DataModule's hook where the running Trainer's DataModule overrides it (Lightning's
        ``_apply_batch_transfer_handler``)."""
        from fulmen.datamodule import DataModule

        datamodule = self._trainer.datamodule if self._trainer is not None else None

        def hook(name: str) -> Any:
            if isinstance(datamodule, DataModule) and \
                    getattr(type(datamodule), name) is not getattr(DataModule, name):
                return getattr(datamodule, name)
            return getattr(self, name)

        sample = hook("on_before_batch_transfer")(sample, 0)
        sample = hook("transfer_batch_to_device")(sample, self.device, 0)
        return hook("on_after_batch_transfer")(sample, 0)

    def freeze(self) -> None:
        for param in self.parameters():
            param.requires_grad = False
        self.eval()

    def unfreeze(self) -> None:
        for param in self.parameters():
            param.requires_grad = True
        self.train()

    @property
    def strict_loading(self) -> bool:
        """Whether a checkpoint's ``state_dict`` must hold exactly this module's keys when a
        Trainer resumes from it (``ckpt_path``) and in :meth:`load_from_checkpoint` without
        ``strict``; False loads the keys that match and ignores the rest (Lightning's
        ``LightningModule.strict_loading``). Default: True."""
        return self._strict_loading in (None, True)

    @strict_loading.setter
    def strict_loading(self, strict: bool | None) -> None:
        self._strict_loading = strict

    @classmethod
    def load_from_checkpoint(cls, checkpoint_path: str | Path, map_location: Any = None,
                             hparams_file: str | Path | None = None, strict: bool | None = None,
                             weights_only: bool | None = None, **kwargs: Any) -> Module:
        """Build the module from the hyper-parameters saved in a checkpoint and load its
        weights, as Lightning's ``load_from_checkpoint``: ``kwargs`` override the saved
        hyper-parameters; those ``__init__`` does not take are left out unless it takes
        ``**kwargs``; a dict/Namespace saved with ``save_hyperparameters(config)`` comes back
        as that argument. ``hparams_file`` (``.yaml``/``.yml``/``.csv``, as the loggers write
        ``hparams.yaml``) replaces the saved hyper-parameters. ``strict``: every key must
        match (default: the built module's :attr:`strict_loading`). The module is moved to the
        device the weights were loaded to. Reads fulmen and Lightning checkpoints.
        Hyper-parameters saved as references (``nn.Module``, ``functools.partial``: a
        ``class_path`` and ``init_args``) are re-created, which imports and calls the recorded
        class: load checkpoints you trust, or pass such objects in ``kwargs``."""
        from fulmen.hparams import (
            CHECKPOINT_PAST_HPARAMS_KEYS,
            constructor_kwargs,
            hparams_from_file,
        )
        from fulmen.references import decode
        from fulmen.trainer.checkpoint import load_state_into, read_checkpoint

        checkpoint = read_checkpoint(checkpoint_path, map_location, weights_only)
        key = cls.CHECKPOINT_HYPER_PARAMS_KEY
        if hparams_file is not None:  # the file's hyper-parameters replace the saved ones
            checkpoint[key] = hparams_from_file(hparams_file)
        checkpoint[key] = {**(checkpoint.get(key) or {}), **kwargs}
        init_kwargs = constructor_kwargs(cls, checkpoint, kwargs, CHECKPOINT_PAST_HPARAMS_KEYS,
                                         decode)
        model = cls(**init_kwargs)
        if model._strict_loading is not None and strict is not None and \
                strict != model.strict_loading:
            raise ConfigurationError(
                f"{cls.__name__}.load_from_checkpoint(..., strict={strict!r}) conflicts with "
                f"{cls.__name__}.strict_loading = {model.strict_loading!r}; set the same value "
                "for both, or leave strict out")
        strict = model.strict_loading if strict is None else strict
        if type(model).configure_model is not Module.configure_model:
            model.configure_model()
        model.on_load_checkpoint(checkpoint)
        state_dict = checkpoint["state_dict"]
        keys = load_state_into(model, state_dict, strict, str(checkpoint_path))
        if not strict:
            if keys.missing_keys:
                rank_zero_warn("Found keys that are in the model state dict but not in the "
                               f"checkpoint: {keys.missing_keys}")
            if keys.unexpected_keys:
                rank_zero_warn("Found keys that are not in the model state dict but in the "
                               f"checkpoint: {keys.unexpected_keys}")
        if not state_dict:
            rank_zero_warn(f"The state dict in {str(checkpoint_path)!r} contains no parameters.")
            return model
        device = next((t.device for t in state_dict.values() if isinstance(t, torch.Tensor)),
                      torch.device("cpu"))
        return model.to(device)


def _jit_ignored() -> tuple[list[str], list[str]]:
    """The attributes annotated on ``Module`` and its fulmen bases, and their properties."""
    annotated: set[str] = set()
    properties: set[str] = set()
    for base in Module.__mro__:
        if base.__module__.startswith("fulmen."):
            annotated.update(vars(base).get("__annotations__", {}))
            properties.update(k for k, v in vars(base).items() if isinstance(v, property))
    annotated -= {"__jit_ignored_attributes__", "__jit_unused_properties__"}
    return sorted(annotated), sorted(properties)


Module.__jit_ignored_attributes__, Module.__jit_unused_properties__ = _jit_ignored()


def _to_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The device and dtype of a ``Module.to(...)`` call, None where it names none:
    ``to(device, dtype, non_blocking)``, ``to(dtype)``, ``to(tensor)`` or by keyword."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    tensor = kwargs.get("tensor")
    for arg in args:
        if isinstance(arg, torch.Tensor):
            tensor = arg
        elif isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, str | torch.device) or (isinstance(arg, int)
                                                      and not isinstance(arg, bool)):
            device = arg
    if tensor is not None:
        device, dtype = tensor.device, tensor.dtype
    return {"device": None if device is None else torch.device(device), "dtype": dtype}


def _record_cast(root: torch.nn.Module, device: torch.device | None = None,
                 dtype: torch.dtype | str | None = None) -> None:
    """Record a move/cast on every ``Module`` in ``root`` (Lightning's ``_update_properties``)."""
    for module in root.modules():
        if isinstance(module, Module):
            if device is not None:
                module._device = device
            if dtype is not None:
                module._dtype = dtype


class LiteTrainerShim:
    """``module.trainer`` of a module set up by Lite, without a Trainer: its attributes are the
    Lite's (``self.trainer.global_rank``, ``.world_size``, ``.strategy``...); one the Lite lacks
    is an error naming it (Lightning's ``_TrainerFabricShim``)."""

    def __init__(self, lite: LiteView) -> None:
        self.lite = lite

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self.lite, name)
        except AttributeError:
            raise AttributeError(
                f"Your LightningModule code tried to access `self.trainer.{name}` but this "
                "attribute is not available when using Fabric with a LightningModule (here: "
                f"fulmen.Lite set this Module up, and Lite has no {name!r})") from None
