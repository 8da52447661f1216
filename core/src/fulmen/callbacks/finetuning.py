"""``BaseFinetuning`` and ``BackboneFinetuning``: freeze parts of a model, then unfreeze them
into new optimizer parameter groups as training goes on."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Generator, Iterable
from typing import Any

import torch
from torch.nn import Module, ModuleDict
from torch.nn.modules.batchnorm import _BatchNorm

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError

log = logging.getLogger(__name__)
Modules = Module | Iterable[Any]


def multiplicative(epoch: int) -> float:
    return 2.0


class BaseFinetuning(Callback):
    """Subclass and override ``freeze_before_training(module)`` (called at ``setup``, before
    ``configure_optimizers``) and ``finetune_function(module, epoch, optimizer)`` (called at every
    training epoch start: unfreeze there, adding the parameters as a new ``param_group``).

    Build the optimizer from the trainable parameters only
    (``Adam(filter(lambda p: p.requires_grad, self.parameters()))``). The parameter groups the
    callback added are part of its state, so a resumed run gets them back before the optimizer
    state is loaded.
    """

    def __init__(self) -> None:
        self._internal_optimizer_metadata: dict[int, list[dict[str, Any]]] = {}
        self._restarting = False

    def state_dict(self) -> dict[str, Any]:
        return {"internal_optimizer_metadata": self._internal_optimizer_metadata}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restarting = True
        self._internal_optimizer_metadata = state_dict.get("internal_optimizer_metadata",
                                                           state_dict)

    def on_load_checkpoint(self, trainer: Any, module: Any, checkpoint: dict[str, Any]) -> None:
        """Re-create the parameter groups of the previous run (fulmen loads optimizer states
        right after the callbacks' states, before ``on_fit_start``)."""
        self._restore_param_groups(trainer, module)

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self._restore_param_groups(trainer, module)

    def _restore_param_groups(self, trainer: Any, module: Any) -> None:
        if not self._restarting:
            return
        if self._internal_optimizer_metadata:
            named_parameters = dict(module.named_parameters())
            for opt_idx, optimizer in enumerate(trainer.optimizers):
                if opt_idx in self._internal_optimizer_metadata:
                    optimizer.param_groups = self._apply_mapping_to_param_groups(
                        self._internal_optimizer_metadata[opt_idx], named_parameters)
        self._restarting = False

    @staticmethod
    def flatten_modules(modules: Modules) -> list[Module]:
        """The leaf modules of ``modules`` (a module or nested iterables of modules), plus parents
        that hold parameters themselves."""
        if isinstance(modules, ModuleDict):
            modules = modules.values()
        if isinstance(modules, Iterable):
            flat: list[Module] = []
            for m in modules:
                flat.extend(BaseFinetuning.flatten_modules(m))
            found: Iterable[Module] = flat
        else:
            found = modules.modules()
        return [m for m in found
                if not list(m.children()) or any(True for _ in m.parameters(recurse=False))]

    @staticmethod
    def filter_params(modules: Modules, train_bn: bool = True,
                      requires_grad: bool = True) -> Generator[torch.nn.Parameter, None, None]:
        """The parameters of ``modules`` whose ``requires_grad`` is ``requires_grad`` (batch-norm
        layers skipped unless ``train_bn``)."""
        for mod in BaseFinetuning.flatten_modules(modules):
            if isinstance(mod, _BatchNorm) and not train_bn:
                continue
            for param in mod.parameters(recurse=False):
                if param.requires_grad == requires_grad:
                    yield param

    @staticmethod
    def make_trainable(modules: Modules) -> None:
        """Unfreeze every parameter of ``modules``."""
        for module in BaseFinetuning.flatten_modules(modules):
            if isinstance(module, _BatchNorm):
                module.track_running_stats = True
            for param in module.parameters(recurse=False):
                param.requires_grad = True

    @staticmethod
    def freeze_module(module: Module) -> None:
        """Freeze the module's own parameters (a batch-norm layer stops tracking statistics)."""
        if isinstance(module, _BatchNorm):
            module.track_running_stats = False
        for param in module.parameters(recurse=False):
            param.requires_grad = False

    @staticmethod
    def freeze(modules: Modules, train_bn: bool = True) -> None:
        """Freeze ``modules``; batch-norm layers stay trainable when ``train_bn``."""
        for mod in BaseFinetuning.flatten_modules(modules):
            if isinstance(mod, _BatchNorm) and train_bn:
                BaseFinetuning.make_trainable(mod)
            else:
                BaseFinetuning.freeze_module(mod)

    @staticmethod
    def filter_on_optimizer(optimizer: torch.optim.Optimizer,
                            params: Iterable[torch.nn.Parameter]) -> list[torch.nn.Parameter]:
        """``params`` without those the optimizer holds already (with a warning naming why)."""
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        out_params: list[torch.nn.Parameter] = []
        removed: list[torch.nn.Parameter] = []
        for param in params:
            (removed if id(param) in held else out_params).append(param)
        if removed:
            warnings.warn(
                f"The provided params to be frozen already exist within another group of this "
                f"optimizer ({len(removed)} of them). Those parameters will be skipped.\n"
                "HINT: Did you init your optimizer in `configure_optimizer` as such:\n "
                f"{type(optimizer)}(filter(lambda p: p.requires_grad, self.parameters()), ...) ",
                stacklevel=2)
        return out_params

    @staticmethod
    def unfreeze_and_add_param_group(modules: Modules, optimizer: torch.optim.Optimizer,
                                     lr: float | None = None, initial_denom_lr: float = 10.0,
                                     train_bn: bool = True) -> None:
        """Unfreeze ``modules`` and add their parameters to ``optimizer`` as one new group with
        ``lr`` (default: the first group's lr / ``initial_denom_lr``)."""
        BaseFinetuning.make_trainable(modules)
        params_lr = optimizer.param_groups[0]["lr"] if lr is None else float(lr)
        denom_lr = initial_denom_lr if lr is None else 1.0
        params = BaseFinetuning.filter_on_optimizer(
            optimizer, BaseFinetuning.filter_params(modules, train_bn=train_bn,
                                                    requires_grad=True))
        if params:
            optimizer.add_param_group({"params": params, "lr": params_lr / denom_lr})

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self.freeze_before_training(module)
        if trainer.strategy.shards_parameters:
            raise ConfigurationError(
                f"The Finetuning callback does not support running with strategy "
                f"{trainer.strategy.name!r}, which shards parameters or optimizer state: new "
                "parameter groups cannot reach it. Choose a different strategy (ddp, "
                "single_device) or remove the callback")

    @staticmethod
    def _apply_mapping_to_param_groups(param_groups: list[dict[str, Any]],
                                       mapping: dict[Any, Any]) -> list[dict[str, Any]]:
        output = []
        for g in param_groups:
            group_state = {k: v for k, v in g.items() if k != "params"}
            group_state["params"] = [mapping[p] for p in g["params"]]
            output.append(group_state)
        return output

    def _store(self, module: Any, opt_idx: int, num_param_groups: int,
               current_param_groups: list[dict[str, Any]]) -> None:
        mapping = {p: n for n, p in module.named_parameters()}
        if opt_idx not in self._internal_optimizer_metadata:
            self._internal_optimizer_metadata[opt_idx] = self._apply_mapping_to_param_groups(
                current_param_groups, mapping)
        elif num_param_groups != len(current_param_groups):  # groups the user's code added
            self._internal_optimizer_metadata[opt_idx].extend(
                self._apply_mapping_to_param_groups(current_param_groups[num_param_groups:],
                                                    mapping))

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        for opt_idx, optimizer in enumerate(trainer.optimizers):
            num_param_groups = len(optimizer.param_groups)
            self.finetune_function(module, trainer.current_epoch, optimizer)
            self._store(module, opt_idx, num_param_groups, optimizer.param_groups)

    def finetune_function(self, pl_module: Any, epoch: int,
                          optimizer: torch.optim.Optimizer) -> None:
        """Override: unfreeze what should train from ``epoch`` on."""
        raise NotImplementedError(f"{type(self).__name__} must override finetune_function"
                                  "(pl_module, epoch, optimizer)")

    def freeze_before_training(self, pl_module: Any) -> None:
        """Override: freeze what should not train at first."""
        raise NotImplementedError(f"{type(self).__name__} must override "
                                  "freeze_before_training(pl_module)")


class BackboneFinetuning(BaseFinetuning):
    """Train the module's ``backbone`` from ``unfreeze_backbone_at_epoch`` on, its learning rate
    starting at ``backbone_initial_lr`` (default: the current lr x ``backbone_initial_ratio_lr``)
    and multiplied by ``lambda_func(epoch + 1)`` each epoch; with ``should_align`` it never
    exceeds the rest of the model's lr."""

    def __init__(self, unfreeze_backbone_at_epoch: int = 10,
                 lambda_func: Callable[[int], float] = multiplicative,
                 backbone_initial_ratio_lr: float = 10e-2,
                 backbone_initial_lr: float | None = None, should_align: bool = True,
                 initial_denom_lr: float = 10.0, train_bn: bool = True, verbose: bool = False,
                 rounding: int = 12) -> None:
        super().__init__()
        if isinstance(unfreeze_backbone_at_epoch, bool) or not isinstance(
                unfreeze_backbone_at_epoch, int) or unfreeze_backbone_at_epoch < 0:
            raise ConfigurationError(f"BackboneFinetuning(unfreeze_backbone_at_epoch="
                                     f"{unfreeze_backbone_at_epoch!r}): give a zero-based epoch, "
                                     "an int >= 0")
        if not callable(lambda_func):
            raise ConfigurationError(f"BackboneFinetuning(lambda_func={lambda_func!r}): give a "
                                     "function epoch -> lr multiplier")
        self.unfreeze_backbone_at_epoch = unfreeze_backbone_at_epoch
        self.lambda_func = lambda_func
        self.backbone_initial_ratio_lr = backbone_initial_ratio_lr
        self.backbone_initial_lr = backbone_initial_lr
        self.should_align = should_align
        self.initial_denom_lr = initial_denom_lr
        self.train_bn = train_bn
        self.verbose = verbose
        self.rounding = rounding
        self.previous_backbone_lr: float | None = None

    def state_dict(self) -> dict[str, Any]:
        return {"internal_optimizer_metadata": self._internal_optimizer_metadata,
                "previous_backbone_lr": self.previous_backbone_lr}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.previous_backbone_lr = state_dict["previous_backbone_lr"]
        super().load_state_dict(state_dict)

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        backbone = getattr(module, "backbone", None)
        if not isinstance(backbone, Module):
            raise ConfigurationError(
                f"BackboneFinetuning: {type(module).__name__} should have a nn.Module `backbone` "
                f"attribute (found {type(backbone).__name__}); assign the part to fine-tune to "
                "self.backbone, or subclass BaseFinetuning")
        super().setup(trainer, module, stage)

    def freeze_before_training(self, pl_module: Any) -> None:
        self.freeze(pl_module.backbone)

    def finetune_function(self, pl_module: Any, epoch: int,
                          optimizer: torch.optim.Optimizer) -> None:
        current_lr = optimizer.param_groups[0]["lr"]
        if epoch == self.unfreeze_backbone_at_epoch:
            initial_backbone_lr = (self.backbone_initial_lr if self.backbone_initial_lr is not None
                                   else current_lr * self.backbone_initial_ratio_lr)
            self.previous_backbone_lr = initial_backbone_lr
            self.unfreeze_and_add_param_group(pl_module.backbone, optimizer, initial_backbone_lr,
                                              train_bn=self.train_bn,
                                              initial_denom_lr=self.initial_denom_lr)
            if self.verbose:
                log.info("Current lr: %s, Backbone lr: %s", round(current_lr, self.rounding),
                         round(initial_backbone_lr, self.rounding))
        elif epoch > self.unfreeze_backbone_at_epoch:
            assert self.previous_backbone_lr is not None
            next_lr = self.lambda_func(epoch + 1) * self.previous_backbone_lr
            if self.should_align and next_lr > current_lr:
                next_lr = current_lr
            optimizer.param_groups[-1]["lr"] = next_lr
            self.previous_backbone_lr = next_lr
            if self.verbose:
                log.info("Current lr: %s, Backbone lr: %s", round(current_lr, self.rounding),
                         round(next_lr, self.rounding))
