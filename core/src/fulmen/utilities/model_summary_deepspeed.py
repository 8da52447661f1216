"""Lightning's model summary under DeepSpeed ZeRO-3 (``DeepSpeedSummary``): parameters are
partitioned across processes, so their sizes come from DeepSpeed's ``ds_numel``, and a
"Params per Device" column shows each process's share."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch

from fulmen.utilities.model_summary import (
    NOT_APPLICABLE,
    LayerSummary,
    ModelSummary,
    _example_input,
    _shape_unknown,
    get_human_readable_count,
)

__all__ = ["DeepSpeedLayerSummary", "DeepSpeedSummary", "deepspeed_param_size"]


def deepspeed_param_size(p: torch.nn.Parameter) -> int:
    """The full size of a ZeRO-partitioned parameter (DeepSpeed's ``ds_numel``)."""
    size: int = p.ds_numel  # type: ignore[attr-defined]
    return size


def _partitioned(parameters: Any) -> int:
    return sum(0 if _shape_unknown(p) else deepspeed_param_size(p) for p in parameters)


class DeepSpeedLayerSummary(LayerSummary):
    """A layer's row: its parameters counted through DeepSpeed."""

    @property
    def num_parameters(self) -> int:
        return _partitioned(self._module.parameters())

    @property
    def average_shard_parameters(self) -> int:
        """The parameters this process holds."""
        sizes: list[int] = [0 if _shape_unknown(p) else int(p.partition_numel())  # type: ignore[attr-defined]
                            for p in self._module.parameters()]
        return sum(sizes)


class DeepSpeedSummary(ModelSummary):
    """``ModelSummary`` of a model partitioned by DeepSpeed ZeRO-3."""

    def summarize(self) -> OrderedDict[str, LayerSummary]:
        summary: OrderedDict[str, LayerSummary] = OrderedDict(
            (name, DeepSpeedLayerSummary(module)) for name, module in self.named_modules)
        if _example_input(self._model) is not None:
            self._forward_example_input()
        for layer in summary.values():
            layer.detach_hook()
        if self._max_depth >= 1:
            for key in [k for k in summary if k.count(".") >= self._max_depth]:
                del summary[key]
        return summary

    @property
    def total_parameters(self) -> int:
        return _partitioned(self._model.parameters())

    @property
    def trainable_parameters(self) -> int:
        return _partitioned(p for p in self._model.parameters() if p.requires_grad)

    @property
    def parameters_per_layer(self) -> list[int]:
        return [layer.average_shard_parameters  # type: ignore[attr-defined]
                for layer in self._layer_summary.values()]

    def _get_summary_data(self) -> list[tuple[str, list[str]]]:
        arrays = super()._get_summary_data()
        per_device = [get_human_readable_count(n) for n in self.parameters_per_layer]
        if self.total_parameters - self.total_layer_params > 0:
            per_device.append(NOT_APPLICABLE)
        names = [name for name, _ in arrays]
        arrays.insert(names.index("Params") + 1, ("Params per Device", per_device))
        return arrays
