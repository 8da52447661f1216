"""Lightning's ``tests_pytorch/callbacks/test_pruning.py``, ported (the CPU tests; the
pruning-function matrix reduced to one case per kind, over 3 epochs instead of 10).

Addition: the weights of a run that prunes are checked to hold zeros (Lightning's check sits
under ``if not strategy``, which its ``strategy="auto"`` never enters), and a saved checkpoint
holds the pruned weights without the ``_orig``/``_mask`` re-parametrization.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.utils import prune as pytorch_prune

from fulmen import ConfigurationError, Trainer, seed_everything
from fulmen.callbacks.pruning import ModelPruning
from fulmen.demos.boring_classes import BoringModel


class TestModel(BoringModel):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Sequential(OrderedDict([
            ("mlp_1", nn.Linear(32, 32)), ("mlp_2", nn.Linear(32, 32, bias=False)),
            ("mlp_3", nn.Linear(32, 2))]))

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        self.log("test", -batch_idx)
        return super().training_step(batch, batch_idx)


class TestPruningMethod(pytorch_prune.BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, _: Any, default_mask: torch.Tensor) -> torch.Tensor:
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0  # prune every other entry
        return mask

    @classmethod
    def apply(cls, module: nn.Module, name: str, amount: float) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


def _trainer(tmp_path: Path, callback: ModelPruning, max_epochs: int = 3, **kwargs: Any) -> Trainer:
    return Trainer(default_root_dir=tmp_path, enable_progress_bar=False,
                   enable_model_summary=False, logger=False, limit_train_batches=10,
                   limit_val_batches=2, max_epochs=max_epochs, callbacks=callback,
                   **{"enable_checkpointing": False, **kwargs})


def test_pruning_misconfiguration() -> None:
    with pytest.raises(ConfigurationError, match=r"chocolate isn't in \('weight', 'bias'\)"):
        ModelPruning(pruning_fn="l1_unstructured", parameter_names=["chocolate"])
    with pytest.raises(ConfigurationError, match=r"expected to be a str in \["):
        ModelPruning(pruning_fn={})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="should be provided"):
        ModelPruning(pruning_fn="random_structured")
    with pytest.raises(ConfigurationError, match=r"must be any of \(0, 1, 2\)"):
        ModelPruning(pruning_fn="l1_unstructured", verbose=3)
    with pytest.raises(ConfigurationError, match="requesting `ln_structured` pruning, the "
                       "`pruning_norm`"):
        ModelPruning(pruning_fn="ln_structured", pruning_dim=0)
    with pytest.raises(ConfigurationError, match="is supported with `use_global_unstructured=True`"):
        ModelPruning(pruning_fn="random_structured", pruning_dim=0, use_global_unstructured=True)
    with pytest.raises(ConfigurationError, match="currently only supported with"):
        ModelPruning(pruning_fn=TestPruningMethod, use_global_unstructured=False)


@pytest.mark.parametrize(("pruning_fn", "use_global_unstructured", "parameters_to_prune",
                          "use_lottery_ticket_hypothesis"), [
    ("l1_unstructured", True, True, False), ("random_unstructured", False, False, True),
    ("ln_structured", False, True, False), ("random_structured", False, False, False),
    (TestPruningMethod, True, False, True)])
def test_pruning_callback(tmp_path: Path, pruning_fn: Any, use_global_unstructured: bool,
                          parameters_to_prune: bool, use_lottery_ticket_hypothesis: bool) -> None:
    seed_everything(1)
    model = TestModel()
    assert torch.all(model.layer.mlp_2.weight != 0)
    kwargs: dict[str, Any] = {"pruning_fn": pruning_fn, "amount": 0.3, "verbose": 1,
                              "use_global_unstructured": use_global_unstructured,
                              "use_lottery_ticket_hypothesis": use_lottery_ticket_hypothesis}
    structured = isinstance(pruning_fn, str) and pruning_fn.endswith("_structured")
    if parameters_to_prune:
        kwargs["parameters_to_prune"] = [(model.layer.mlp_1, "weight"),
                                         (model.layer.mlp_2, "weight")]
    else:
        kwargs["parameter_names"] = ["weight"] if structured else ["weight", "bias"]
    if structured:
        kwargs["pruning_dim"] = 0
    if pruning_fn == "ln_structured":
        kwargs["pruning_norm"] = 1
    trainer = _trainer(tmp_path, ModelPruning(**kwargs))
    trainer.fit(model)
    trainer.test(model)
    assert torch.any(model.layer.mlp_2.weight == 0)
    assert not any(name.endswith("_orig") for name, _ in model.named_parameters())  # permanent


@pytest.mark.parametrize("resample_parameters", [False, True])
def test_pruning_lth_callable(tmp_path: Path, resample_parameters: bool) -> None:
    model = TestModel()

    class ModelPruningTestCallback(ModelPruning):
        lth_calls = 0

        def apply_lottery_ticket_hypothesis(self) -> None:
            super().apply_lottery_ticket_hypothesis()
            self.lth_calls += 1
            assert self._original_layers is not None
            for layer in self._original_layers.values():
                copy, names = layer["data"], layer["names"]
                for i, name in names:
                    current, current_name = self._parameters_to_prune[i]
                    assert name == current_name
                    actual = getattr(current, name + "_orig", getattr(current, name)).data
                    same = torch.allclose(actual.cpu(), getattr(copy, name).data)
                    assert not same if self._resample_parameters else same

    pruning = ModelPruningTestCallback("l1_unstructured",
                                       use_lottery_ticket_hypothesis=lambda e: bool(e % 2),
                                       resample_parameters=resample_parameters)
    trainer = _trainer(tmp_path, pruning, max_epochs=5)
    trainer.fit(model)
    assert pruning.lth_calls == trainer.max_epochs // 2


def test_checkpoint_holds_the_permanently_pruned_weights(tmp_path: Path) -> None:
    model = TestModel()
    pruning = ModelPruning("l1_unstructured", amount=0.5,
                           parameters_to_prune=[(model.layer.mlp_2, "weight")])
    trainer = _trainer(tmp_path, pruning, max_epochs=1, enable_checkpointing=True)
    trainer.fit(model)
    [path] = (tmp_path / "checkpoints").glob("*.ckpt")
    state = torch.load(path, weights_only=True)["state_dict"]
    assert "layer.mlp_2.weight" in state and not any(k.endswith(("_orig", "_mask"))
                                                    for k in state)
    assert float((state["layer.mlp_2.weight"] == 0).float().mean()) >= 0.5
