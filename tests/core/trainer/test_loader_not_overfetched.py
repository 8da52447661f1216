"""The loops never ask a sized loader for a batch past its length (or past the batch limit).

Lightning's loops stop at the limit before fetching again (``_Sequential`` stops at its
limits, the prefetching fetcher does not look ahead for a loader with ``len``). scvi-tools'
``ConcatDataLoader`` relies on it: it iterates ``zip(largest, cycle(other), strict=True)``, which
raises when asked for one more batch. Written from Lightning's source; Lightning 2.6.6 runs the
same code to the same step and result counts.
"""

from __future__ import annotations

from typing import Any

import pytest
from boring import BoringModel, RandomDataset
from torch.utils.data import DataLoader

import fulmen


class StrictLoader(DataLoader):
    """Raises when asked for a batch after its last one (as ``zip(..., strict=True)``)."""

    def __iter__(self) -> Any:
        yield from super().__iter__()
        raise ValueError("asked for a batch past len()")


class Model(BoringModel):
    def _loader(self) -> StrictLoader:
        return StrictLoader(RandomDataset(32, 4), batch_size=2)

    def train_dataloader(self) -> Any:
        return self._loader()

    def val_dataloader(self) -> Any:
        return self._loader()

    def test_dataloader(self) -> Any:
        return self._loader()

    def predict_dataloader(self) -> Any:
        return self._loader()


@pytest.mark.parametrize("limit", [1.0, 1])
def test_loaders_not_asked_past_their_end(tmp_path, limit):
    trainer = fulmen.Trainer(default_root_dir=tmp_path, max_epochs=2, logger=False,
                             limit_val_batches=limit, limit_test_batches=limit,
                             limit_predict_batches=limit, enable_progress_bar=False,
                             enable_model_summary=False, enable_checkpointing=False)
    model = Model()
    trainer.fit(model)
    assert trainer.global_step == 4
    assert trainer.num_val_batches == [1 if isinstance(limit, int) else 2]
    assert len(trainer.validate(model, verbose=False)) == 1
    assert len(trainer.test(model, verbose=False)) == 1
    predictions = trainer.predict(model)
    assert predictions is not None and len(predictions) == (1 if isinstance(limit, int) else 2)
