"""``ModelPruning`` (Lightning's callback): prune parameters during training with
``torch.nn.utils.prune``, at the end of each training epoch (or validation epoch), with the
lottery-ticket reset, and make the pruning permanent at the end of training and in saved
checkpoints. Lightning's arguments and checks."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from copy import deepcopy
from functools import partial
from typing import Any

import torch
from torch import nn
from torch.nn.utils import prune as pytorch_prune

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.apply_func import apply_to_collection
from fulmen.utilities.rank_zero import rank_zero_debug, rank_zero_only

__all__ = ["ModelPruning"]

log = logging.getLogger(__name__)

_FUNCTIONS = {"ln_structured": pytorch_prune.ln_structured,
              "l1_unstructured": pytorch_prune.l1_unstructured,
              "random_structured": pytorch_prune.random_structured,
              "random_unstructured": pytorch_prune.random_unstructured}
_METHODS = {"ln_structured": pytorch_prune.LnStructured,
            "l1_unstructured": pytorch_prune.L1Unstructured,
            "random_structured": pytorch_prune.RandomStructured,
            "random_unstructured": pytorch_prune.RandomUnstructured}
_Params = Sequence[tuple[nn.Module, str]]


def _containers() -> tuple[type, ...]:
    from fulmen.module import Module

    return (Module, nn.Sequential, nn.ModuleList, nn.ModuleDict)


class ModelPruning(Callback):
    """Prune ``parameters_to_prune`` (``[(module, "weight"), ...]``; every ``weight`` and
    ``bias`` of the model when empty) with ``pruning_fn`` (a name such as
    ``"l1_unstructured"`` or a ``BasePruningMethod`` subclass) by ``amount`` (a fraction, a
    count, or a function of the epoch), globally with ``use_global_unstructured``.
    ``use_lottery_ticket_hypothesis`` resets the remaining weights to their initial values
    (resampled with ``resample_parameters``); ``verbose`` 1 logs the sparsity, 2 per layer."""

    PARAMETER_NAMES = ("weight", "bias")

    def __init__(self, pruning_fn: Callable[..., Any] | str, parameters_to_prune: _Params = (),
                 parameter_names: list[str] | None = None, use_global_unstructured: bool = True,
                 amount: int | float | Callable[[int], int | float] = 0.5,
                 apply_pruning: bool | Callable[[int], bool] = True,
                 make_pruning_permanent: bool = True,
                 use_lottery_ticket_hypothesis: bool | Callable[[int], bool] = True,
                 resample_parameters: bool = False, pruning_dim: int | None = None,
                 pruning_norm: int | None = None, verbose: int = 0,
                 prune_on_train_epoch_end: bool = True) -> None:
        self._use_global_unstructured = use_global_unstructured
        self._parameters_to_prune = parameters_to_prune
        self._use_lottery_ticket_hypothesis = use_lottery_ticket_hypothesis
        self._resample_parameters = resample_parameters
        self._prune_on_train_epoch_end = prune_on_train_epoch_end
        self._parameter_names = parameter_names or self.PARAMETER_NAMES
        self._global_kwargs: dict[str, Any] = {}
        self._original_layers: dict[int, dict[str, Any]] | None = None
        self._pruning_method_name: str | None = None
        for name in self._parameter_names:
            if name not in self.PARAMETER_NAMES:
                raise ConfigurationError(f"The provided `parameter_names` name: {name} isn't in "
                                         f"{self.PARAMETER_NAMES}")
        if isinstance(pruning_fn, str):
            kwargs: dict[str, Any] = {}
            pruning_fn = pruning_fn.lower()
            if pruning_fn not in _FUNCTIONS:
                raise ConfigurationError(f"The provided `pruning_fn` {pruning_fn} isn't available "
                                         f"in PyTorch's built-in functions: {list(_FUNCTIONS)} ")
            if pruning_fn.endswith("_structured"):
                if pruning_dim is None:
                    raise ConfigurationError("When requesting `structured` pruning, the "
                                             "`pruning_dim` should be provided.")
                if pruning_fn == "ln_structured":
                    if pruning_norm is None:
                        raise ConfigurationError("When requesting `ln_structured` pruning, the "
                                                 "`pruning_norm` should be provided.")
                    kwargs["n"] = pruning_norm
                kwargs["dim"] = pruning_dim
            pruning_fn = self._create_pruning_fn(pruning_fn, **kwargs)
        elif self._is_pruning_method(pruning_fn):
            if not use_global_unstructured:
                raise ConfigurationError("PyTorch `BasePruningMethod` is currently only supported "
                                         "with `use_global_unstructured=True`.")
        else:
            raise ConfigurationError(
                f"`pruning_fn` is expected to be a str in {list(_FUNCTIONS)} or a PyTorch "
                f"`BasePruningMethod`. Found: {pruning_fn}. HINT: if passing a "
                "`BasePruningMethod`, pass the class, not an instance")
        if use_global_unstructured and \
                getattr(pruning_fn, "PRUNING_TYPE", None) != "unstructured":
            raise ConfigurationError(
                'Only the "unstructured" PRUNING_TYPE is supported with '
                f"`use_global_unstructured=True`. Found method {pruning_fn} of type "
                f"{getattr(pruning_fn, 'PRUNING_TYPE', None)}. ")
        self.pruning_fn: Any = pruning_fn
        self._apply_pruning = apply_pruning
        self._make_pruning_permanent = make_pruning_permanent
        if not (isinstance(amount, int | float) or callable(amount)):
            raise ConfigurationError("`amount` should be provided and be either an int, a float "
                                     "or Callable function.")
        self.amount = amount
        if verbose not in (0, 1, 2):
            raise ConfigurationError("`verbose` must be any of (0, 1, 2)")
        self._verbose = verbose

    def filter_parameters_to_prune(self, parameters_to_prune: _Params = ()) -> _Params:
        """Override to choose which of the parameters to prune."""
        return parameters_to_prune

    def _create_pruning_fn(self, name: str, **kwargs: Any) -> Any:
        method: Any = _METHODS[name] if self._use_global_unstructured else _FUNCTIONS[name]
        self._pruning_method_name = method.__name__
        if self._use_global_unstructured:
            self._global_kwargs = kwargs
            return method
        return partial(method, **kwargs)

    def make_pruning_permanent(self, module: nn.Module) -> None:
        """Remove the pruning re-parametrization of every pruned parameter under ``module``
        (the mask is applied to the weights for good)."""
        for _, submodule in module.named_modules():
            for name, _ in list(submodule.named_parameters(recurse=False)):
                if name.endswith("_orig") and pytorch_prune.is_pruned(submodule):
                    pytorch_prune.remove(submodule, name[:-len("_orig")])

    @staticmethod
    def _copy_param(new: nn.Module, old: nn.Module, name: str) -> None:
        dst = getattr(new, name + "_orig", None)
        dst = getattr(new, name) if dst is None else dst
        src = getattr(old, name)
        if isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor):
            dst.data = src.data.to(dst.device)

    def apply_lottery_ticket_hypothesis(self) -> None:
        """Reset the weights that remain to their values before training (or resampled ones
        with ``resample_parameters``): step 4 of the lottery ticket hypothesis."""
        assert self._original_layers is not None
        for layer in self._original_layers.values():
            copy = layer["data"]
            if self._resample_parameters and callable(getattr(copy, "reset_parameters", None)):
                copy = deepcopy(copy)
                copy.reset_parameters()
            for i, name in layer["names"]:
                self._copy_param(self._parameters_to_prune[i][0], copy, name)

    def _resolve_global_kwargs(self, amount: float) -> dict[str, Any]:
        self._global_kwargs["amount"] = amount
        params = set(inspect.signature(self.pruning_fn).parameters) - {"self"}
        return {k: v for k, v in self._global_kwargs.items() if k in params}

    @staticmethod
    def _get_pruned_stats(module: nn.Module, name: str) -> tuple[int, int]:
        mask = getattr(module, f"{name}_mask", None)
        if mask is None:
            return 0, 1
        return int((mask == 0).sum().item()), mask.numel()

    def apply_pruning(self, amount: int | float) -> None:
        """Prune ``parameters_to_prune`` by ``amount`` now."""
        previous = [self._get_pruned_stats(m, n) for m, n in self._parameters_to_prune] \
            if self._verbose else []
        if self._use_global_unstructured:
            pytorch_prune.global_unstructured(self._parameters_to_prune,
                                              pruning_method=self.pruning_fn,
                                              **self._resolve_global_kwargs(amount))
        else:
            for module, name in self._parameters_to_prune:
                self.pruning_fn(module, name=name, amount=amount)
        if self._verbose:
            current = [self._get_pruned_stats(m, n) for m, n in self._parameters_to_prune]
            self._log_sparsity_stats(previous, current, amount=amount)

    @rank_zero_only
    def _log_sparsity_stats(self, prev: list[tuple[int, int]], curr: list[tuple[int, int]],
                            amount: int | float = 0) -> None:
        total = sum(n for _, n in curr)
        before, after = sum(z for z, _ in prev), sum(z for z, _ in curr)
        log.info(f"Applied `{self._pruning_method_name}`. Pruned: {before}/{total} "
                 f"({before / total:.2%}) -> {after}/{total} ({after / total:.2%})")
        if self._verbose == 2:
            for i, (module, name) in enumerate(self._parameters_to_prune):
                (pz, ps), (cz, cs) = prev[i], curr[i]
                log.info(f"Applied `{self._pruning_method_name}` to `{module!r}.{name}` with "
                         f"amount={amount}. Pruned: {pz} ({pz / ps:.2%}) -> {cz} ({cz / cs:.2%})")

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        parameters = self.sanitize_parameters_to_prune(pl_module, self._parameters_to_prune,
                                                       parameter_names=self._parameter_names)
        self._parameters_to_prune = self.filter_parameters_to_prune(parameters)
        if self._use_lottery_ticket_hypothesis:
            self._original_layers = {}
            for i, (module, name) in enumerate(self._parameters_to_prune):
                layer = self._original_layers.setdefault(
                    id(module), {"data": deepcopy(module), "names": []})
                layer["names"].append((i, name))

    def _run_pruning(self, current_epoch: int) -> None:
        prune = self._apply_pruning(current_epoch) if callable(self._apply_pruning) \
            else self._apply_pruning
        amount = self.amount(current_epoch) if callable(self.amount) else self.amount
        if not prune or not amount:
            return
        self.apply_pruning(amount)
        lottery = self._use_lottery_ticket_hypothesis
        if lottery(current_epoch) if callable(lottery) else lottery:
            self.apply_lottery_ticket_hypothesis()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self._prune_on_train_epoch_end:
            rank_zero_debug("`ModelPruning.on_train_epoch_end`. Applying pruning")
            self._run_pruning(pl_module.current_epoch)

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking and not self._prune_on_train_epoch_end:
            rank_zero_debug("`ModelPruning.on_validation_epoch_end`. Applying pruning")
            self._run_pruning(pl_module.current_epoch)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self._make_pruning_permanent:
            rank_zero_debug("`ModelPruning.on_train_end`. Pruning is made permanent for this "
                            "checkpoint")
            self.make_pruning_permanent(pl_module)

    @staticmethod
    def _permanent_state_dict(pl_module: nn.Module) -> dict[str, Any]:
        state = pl_module.state_dict()
        for name in {k[:-len("_mask")] for k in state if k.endswith("_mask")}:
            orig, mask = state.pop(name + "_orig"), state.pop(name + "_mask")
            state[name] = mask.to(dtype=orig.dtype) * orig
        return apply_to_collection(state, torch.Tensor, lambda t: t.cpu())

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        if self._make_pruning_permanent:
            rank_zero_debug("`ModelPruning.on_save_checkpoint`. Pruning is made permanent for "
                            "this checkpoint")
            checkpoint["state_dict"] = self._permanent_state_dict(pl_module)

    @staticmethod
    def sanitize_parameters_to_prune(pl_module: nn.Module, parameters_to_prune: _Params = (),
                                     parameter_names: Sequence[str] = ()) -> _Params:
        """``parameters_to_prune`` checked against the model, or every named parameter of its
        layers when empty."""
        names = parameter_names or ModelPruning.PARAMETER_NAMES
        modules = [m for m in pl_module.modules() if not isinstance(m, _containers())]
        if not parameters_to_prune:
            return [(m, p) for p in names for m in modules
                    if isinstance(getattr(m, p, None), nn.Parameter)]
        if isinstance(parameters_to_prune, list | tuple) and all(
                len(p) == 2 and isinstance(p[0], nn.Module) and isinstance(p[1], str)
                for p in parameters_to_prune):
            missing_modules = [m for m, _ in parameters_to_prune if m not in modules]
            missing_parameters = [n for m, n in parameters_to_prune
                                  if m in modules and not hasattr(m, n)]
            if missing_modules or missing_parameters:
                raise ConfigurationError(
                    "Some provided `parameters_to_prune` don't exist in the model. Found missing "
                    f"modules: {missing_modules} and missing parameters: {missing_parameters}")
            return parameters_to_prune
        raise ConfigurationError("The provided `parameters_to_prune` should either be list of "
                                 "tuple with 2 elements: (nn.Module, parameter_name_to_prune) or "
                                 "None")

    @staticmethod
    def _is_pruning_method(method: Any) -> bool:
        return inspect.isclass(method) and issubclass(method, pytorch_prune.BasePruningMethod)
