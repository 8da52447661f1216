"""Layer table of a module: names, types, parameters, train/eval mode, FLOPs and (with
``example_input_array``) in/out sizes — Lightning's ``utilities.model_summary`` (``ModelSummary``,
``summarize``, ``get_human_readable_count``) under the same names and format."""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from torch.utils.hooks import RemovableHandle

from fulmen.utilities.rank_zero import WarningCache, rank_zero_warn

warning_cache = WarningCache()
PARAMETER_NUM_UNITS = [" ", "K", "M", "B", "T"]
UNKNOWN_SIZE = "?"
LEFTOVER_PARAMS_NAME = "other params"
NOT_APPLICABLE = "n/a"
#: bits per parameter for the size estimate; other precisions count 32 (with a warning)
PRECISION_BITS = {"64": 64, "32": 32, "16": 16, "bf16": 16, "16-true": 16, "bf16-true": 16,
                  "32-true": 32, "64-true": 64}


class LayerSummary:
    """Type, parameter count and (after a forward pass) in/out sizes of one layer."""

    def __init__(self, module: nn.Module) -> None:
        self._module = module
        self._in_size: str | list[Any] | None = None
        self._out_size: str | list[Any] | None = None
        self._hook_handle = self._register_hook()

    def __del__(self) -> None:
        self.detach_hook()

    def _register_hook(self) -> RemovableHandle | None:
        """A forward hook that records the sizes on the first call, then removes itself."""

        def hook(_: nn.Module, args: Any, kwargs: Any, out: Any) -> None:
            inp = (*args, *kwargs.values()) if kwargs is not None else args
            if len(inp) == 1:
                inp = inp[0]
            self._in_size = parse_batch_shape(inp)
            self._out_size = parse_batch_shape(out)
            self.detach_hook()

        if isinstance(self._module, torch.jit.ScriptModule):
            return None
        return self._module.register_forward_hook(hook, with_kwargs=True)

    def detach_hook(self) -> None:
        handle = self.__dict__.get("_hook_handle")
        if handle is not None:
            handle.remove()

    @property
    def in_size(self) -> str | list[Any]:
        return self._in_size or UNKNOWN_SIZE

    @property
    def out_size(self) -> str | list[Any]:
        return self._out_size or UNKNOWN_SIZE

    @property
    def layer_type(self) -> str:
        return type(self._module).__name__

    @property
    def num_parameters(self) -> int:
        return sum(0 if _shape_unknown(p) else p.numel() for p in self._module.parameters())

    @property
    def training(self) -> bool:
        return self._module.training


class ModelSummary:
    """Summary of ``model``'s layers down to ``max_depth`` (-1: all, 0: none); ``str()`` is
    the table. With ``model.example_input_array`` set, the model is run once on it (in eval
    mode, no grad, under the Trainer's precision) to fill sizes and FLOPs."""

    def __init__(self, model: nn.Module, max_depth: int = 1) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < -1:
            raise ValueError(f"`max_depth` can be -1, 0 or > 0, got {max_depth}.")
        self._model = model
        self._max_depth = max_depth
        # depth + 1: the root module is depth 0
        self._flop_counter = FlopCounterMode(display=False, depth=max_depth + 1)
        self._layer_summary = self.summarize()
        trainer = _trainer_of(model)
        precision = str(trainer.precision) if trainer is not None else "32-true"
        if trainer is not None and precision not in PRECISION_BITS:
            rank_zero_warn(f"Precision {precision} is not supported by the model summary. "
                           " Estimated model size in MB will not be accurate. Using 32 bits "
                           "instead.", category=UserWarning)
        self._precision_megabytes = (PRECISION_BITS.get(precision, 32) / 8.0) * 1e-6

    @property
    def named_modules(self) -> list[tuple[str, nn.Module]]:
        if self._max_depth == 0:
            return []
        if self._max_depth == 1:
            return list(self._model.named_children())
        return list(self._model.named_modules())[1:]  # without the root

    @property
    def layer_names(self) -> list[str]:
        return list(self._layer_summary.keys())

    @property
    def layer_types(self) -> list[str]:
        return [layer.layer_type for layer in self._layer_summary.values()]

    @property
    def in_sizes(self) -> list[Any]:
        return [layer.in_size for layer in self._layer_summary.values()]

    @property
    def out_sizes(self) -> list[Any]:
        return [layer.out_size for layer in self._layer_summary.values()]

    @property
    def param_nums(self) -> list[int]:
        return [layer.num_parameters for layer in self._layer_summary.values()]

    @property
    def training_modes(self) -> list[bool]:
        return [layer.training for layer in self._layer_summary.values()]

    @property
    def total_training_modes(self) -> dict[str, int]:
        modes = [m.training for m in self._model.modules()][1:]  # without the root
        return {"train": modes.count(True), "eval": modes.count(False)}

    @property
    def total_parameters(self) -> int:
        return sum(0 if _shape_unknown(p) else p.numel() for p in self._model.parameters())

    @property
    def trainable_parameters(self) -> int:
        return sum(0 if _shape_unknown(p) else p.numel() for p in self._model.parameters()
                   if p.requires_grad)

    @property
    def total_layer_params(self) -> int:
        return sum(self.param_nums)

    @property
    def model_size(self) -> float:
        """Estimated size of the parameters in MB."""
        return self.total_parameters * self._precision_megabytes

    @property
    def total_flops(self) -> int:
        return int(self._flop_counter.get_total_flops())

    @property
    def flop_counts(self) -> dict[str, dict[Any, int]]:
        counts = self._flop_counter.get_flop_counts()
        root = type(self._model).__name__
        return {name: dict(counts.get(f"{root}.{name}", {})) for name in self.layer_names}

    def summarize(self) -> OrderedDict[str, LayerSummary]:
        summary = OrderedDict((name, LayerSummary(m)) for name, m in self.named_modules)
        if _example_input(self._model) is not None:
            self._forward_example_input()
        for layer in summary.values():
            layer.detach_hook()
        if self._max_depth >= 1:
            for key in [k for k in summary if k.count(".") >= self._max_depth]:
                del summary[key]
        return summary

    def _forward_example_input(self) -> None:
        from fulmen.utilities.apply_func import move_data_to_device

        model = self._model
        trainer = _trainer_of(model)
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        input_ = move_data_to_device(_example_input(model), device)
        modes = {m: m.training for m in model.modules()}
        model.eval()
        forward_context = trainer.strategy.precision.forward_context() if trainer is not None \
            else contextlib.nullcontext()
        try:
            with torch.no_grad(), forward_context, self._flop_counter:
                if isinstance(input_, list | tuple):
                    model(*input_)
                elif isinstance(input_, dict):
                    model(**input_)
                else:
                    model(input_)
        finally:
            for module, training in modes.items():
                module.training = training

    def _get_summary_data(self) -> list[tuple[str, list[str]]]:
        arrays = [
            (" ", [str(i) for i in range(len(self._layer_summary))]),
            ("Name", self.layer_names),
            ("Type", self.layer_types),
            ("Params", [get_human_readable_count(n) for n in self.param_nums]),
            ("Mode", ["train" if mode else "eval" for mode in self.training_modes]),
            ("FLOPs", [get_human_readable_count(sum(x.values()))
                       for x in self.flop_counts.values()]),
        ]
        if _example_input(self._model) is not None:
            arrays.append(("In sizes", [str(x) for x in self.in_sizes]))
            arrays.append(("Out sizes", [str(x) for x in self.out_sizes]))
        leftover = self.total_parameters - self.total_layer_params
        if leftover > 0:  # parameters directly on the root, in no layer
            columns = dict(arrays)
            extra = {" ": " ", "Name": LEFTOVER_PARAMS_NAME, "Type": NOT_APPLICABLE,
                     "Params": get_human_readable_count(leftover), "Mode": NOT_APPLICABLE,
                     "FLOPs": NOT_APPLICABLE, "In sizes": NOT_APPLICABLE,
                     "Out sizes": NOT_APPLICABLE}
            for key, column in columns.items():
                column.append(extra[key])
        return arrays

    def __str__(self) -> str:
        return _format_summary_table(self.total_parameters, self.trainable_parameters,
                                     self.model_size, self.total_training_modes,
                                     self.total_flops, *self._get_summary_data())

    def __repr__(self) -> str:
        return str(self)


def parse_batch_shape(batch: Any) -> str | list[Any]:
    if isinstance(batch, torch.Tensor):
        return list(batch.shape)
    if isinstance(batch, list | tuple):
        return [parse_batch_shape(el) for el in batch]
    return UNKNOWN_SIZE


def _format_summary_table(total_parameters: int, trainable_parameters: int, model_size: float,
                          total_training_modes: dict[str, int], total_flops: int,
                          *cols: tuple[str, list[str]]) -> str:
    """The columns side by side, then the totals (Lightning's layout, line for line)."""
    n_rows = len(cols[0][1])
    widths = [max([len(str(a)) for a in c[1]] + [len(c[0])]) for c in cols]
    total_width = sum(widths) + 3 * (1 + len(cols))
    cell = "{:<{}}"
    lines = [" | ".join(cell.format(c[0], w) for c, w in zip(cols, widths)), "-" * total_width]
    lines += [" | ".join(cell.format(str(c[1][i]), w) for c, w in zip(cols, widths))
              for i in range(n_rows)]
    lines.append("-" * total_width)
    for value, label in (
            (get_human_readable_count(trainable_parameters), "Trainable params"),
            (get_human_readable_count(total_parameters - trainable_parameters),
             "Non-trainable params"),
            (get_human_readable_count(total_parameters), "Total params"),
            (get_formatted_model_size(model_size), "Total estimated model params size (MB)"),
            (total_training_modes["train"], "Modules in train mode"),
            (total_training_modes["eval"], "Modules in eval mode"),
            (get_human_readable_count(total_flops), "Total Flops")):
        lines.append(cell.format(value, 10) + label)
    return "\n".join(lines)


def get_formatted_model_size(total_model_size: float) -> str:
    return f"{total_model_size:,.3f}"


def get_human_readable_count(number: int | float) -> str:
    """``123`` → ``'123  '``, ``1234`` → ``'1.2 K'``, ``2e6`` → ``'2.0 M'``, ``4e14`` →
    ``'400 T'``, ``5e15`` → ``'5,000 T'`` (no unit beyond trillions)."""
    if number < 0:
        raise ValueError(f"get_human_readable_count({number}): expected a count >= 0")
    labels = PARAMETER_NUM_UNITS
    num_digits = math.floor(math.log10(number)) + 1 if number > 0 else 1
    num_groups = min(math.ceil(num_digits / 3), len(labels))
    number = number * (10 ** (-3 * (num_groups - 1)))
    index = num_groups - 1
    if index < 1 or number >= 100:
        return f"{int(number):,d} {labels[index]}"
    return f"{number:,.1f} {labels[index]}"


def summarize(module: nn.Module, max_depth: int = 1) -> ModelSummary:
    """``ModelSummary(module, max_depth)``."""
    return ModelSummary(module, max_depth=max_depth)


def _shape_unknown(p: torch.Tensor) -> bool:
    from torch.nn.parameter import UninitializedParameter

    if isinstance(p, UninitializedParameter):
        warning_cache.warn("The total number of parameters detected may be inaccurate because "
                           "the model contains an instance of `UninitializedParameter`. To get "
                           "an accurate number, set `self.example_input_array` in your Module.")
        return True
    return False


def _trainer_of(model: nn.Module) -> Any:
    """The Trainer a fulmen Module is attached to, else None (plain modules have none)."""
    from fulmen.module import Module

    return model._trainer if isinstance(model, Module) else None


def _example_input(model: nn.Module) -> Any:
    from fulmen.module import Module

    return model.example_input_array if isinstance(model, Module) else None
