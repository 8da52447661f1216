"""Random state around validation, as in Lightning: only the sanity check is isolated
(``isolate_rng`` in Lightning's ``Trainer._run_stage``); validation inside fit draws from the
same generators as training, so same-seed runs give Lightning's numbers.

Ports ``tests_pytorch/loops/test_training_loop.py::test_training_starts_with_seed``.

Deliberate differences: none. (fulmen used to restore the random state after every validation
inside fit as well, so same-seed runs parted from Lightning's after the first validation.)
"""

from __future__ import annotations

import pytest
import torch
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen
from fulmen import seed_everything


class SeededModel(BoringModel):
    def __init__(self) -> None:
        super().__init__()
        self.seen_batches: list[torch.Tensor] = []
        self.draws: list[float] = []

    def training_step(self, batch, batch_idx):
        self.seen_batches.append(batch.view(-1))
        self.draws.append(torch.rand(1).item())
        return super().training_step(batch, batch_idx)


def _run(tmp_path, **flags) -> SeededModel:
    model = SeededModel()
    trainer = fulmen.Trainer(default_root_dir=tmp_path, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, **flags)
    trainer.fit(model)
    return model


@pytest.mark.parametrize("seed_once", [True, False])
def test_training_starts_with_seed(tmp_path, seed_once) -> None:
    """num_sanity_val_steps must not affect the random state."""

    def run_training(**flags) -> torch.Tensor:
        return torch.cat(_run(tmp_path, **flags).seen_batches)

    if seed_once:
        seed_everything(123)
        sequence0 = run_training(max_steps=2, num_sanity_val_steps=0)
        sequence1 = run_training(max_steps=2, num_sanity_val_steps=2)
        assert not torch.allclose(sequence0, sequence1)
    else:
        seed_everything(123)
        sequence0 = run_training(max_steps=2, num_sanity_val_steps=0)
        seed_everything(123)
        sequence1 = run_training(max_steps=2, num_sanity_val_steps=2)
        assert torch.allclose(sequence0, sequence1)


def test_validation_inside_fit_shares_the_random_state(tmp_path) -> None:
    """A validation epoch consumes random numbers (its DataLoader's ``iter()`` draws a seed from
    torch's generator), and training goes on from there, as in Lightning."""
    data = RandomDataset(32, 8)  # made before seeding: loading it draws nothing

    class FixedData(SeededModel):
        def train_dataloader(self):
            return DataLoader(data, batch_size=4)

        def val_dataloader(self):
            return DataLoader(data, batch_size=4)

    def draws(**flags) -> list[float]:
        seed_everything(7)
        model = FixedData()
        fulmen.Trainer(default_root_dir=tmp_path, logger=False, enable_checkpointing=False,
                       enable_progress_bar=False, enable_model_summary=False, max_epochs=2,
                       **flags).fit(model)
        return model.draws

    without = draws(limit_val_batches=0, num_sanity_val_steps=0)
    validated = draws(limit_val_batches=1, num_sanity_val_steps=2)
    assert validated[:2] == without[:2]  # the sanity check changed nothing
    assert validated[2:] != without[2:]  # the validation after epoch 0 drew numbers


def test_validate_alone_is_not_isolated(tmp_path) -> None:
    """``trainer.validate`` leaves the random state where validation left it (Lightning)."""
    seed_everything(3)
    fulmen.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False,
                   limit_val_batches=1).validate(BoringModel(), verbose=False)
    after = torch.rand(1).item()
    seed_everything(3)
    iter(BoringModel().val_dataloader())  # what validate drew: init, data, the loader's seed
    assert after == torch.rand(1).item()
