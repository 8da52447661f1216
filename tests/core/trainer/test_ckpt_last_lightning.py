"""``ckpt_path="last"``: ported from Lightning's ``tests_pytorch/trainer/test_trainer.py``
(``test_checkpoint_path_input_last``), plus what a restart-safe script relies on.

Deliberate differences from Lightning (also in docs/migrating.md):

- ``"last"`` is the newest *complete* checkpoint of any kind fulmen knows: ``last.ckpt``, any
  other checkpoint in ``ModelCheckpoint.dirpath`` and the preemption checkpoints
  (``hpc_ckpt_<n>.ckpt``) in ``default_root_dir``. Lightning looks only at the ``last`` files
  and the on-exception checkpoint, so with ``save_last=False`` it finds nothing even though a
  periodic checkpoint exists; fulmen resumes from that one.
- A candidate that is incomplete (a directory whose manifest lists a missing file, a truncated
  file) is skipped with a warning and the next newest one is taken; a save a killed job left
  behind has a temporary name and is never a candidate.
- The validate case with ``ckpt_path=None`` (the best model of the previous fit) is dropin's
  and tested there.
"""

from __future__ import annotations

import os
import shutil
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import ModelCheckpoint


def _trainer(tmp_path: Path, mc: ModelCheckpoint, **kwargs: object) -> fulmen.Trainer:
    settings: dict[str, object] = {"max_epochs": 1, "limit_train_batches": 1,
                                   "limit_val_batches": 1, **kwargs}
    return fulmen.Trainer(enable_model_summary=False, enable_progress_bar=False, logger=False,
                          default_root_dir=tmp_path, callbacks=[mc], **settings)


@pytest.mark.parametrize("ckpt_path", [None, "last"])
@pytest.mark.parametrize("save_last", [True, False])
@pytest.mark.parametrize("fn", ["fit", "validate"])
def test_checkpoint_path_input_last(tmp_path, ckpt_path, save_last, fn):
    model = BoringModel()
    mc = ModelCheckpoint(save_last=save_last)
    trainer = _trainer(tmp_path, mc)
    assert trainer.ckpt_path is None
    trainer_fn = getattr(trainer, fn)

    if fn == "fit":
        ctxt = nullcontext() if ckpt_path is None else pytest.warns(
            UserWarning, match="No checkpoint will be loaded")
        with ctxt:
            trainer_fn(model, ckpt_path=ckpt_path)
        assert trainer.ckpt_path is None
    elif ckpt_path == "last":
        trainer.fit(model)
        # fulmen: the newest checkpoint, whether or not it is a "last" file (see the docstring)
        final_path = mc.last_model_path if save_last else mc.best_model_path
        trainer_fn(ckpt_path=ckpt_path)
        assert trainer.ckpt_path == final_path


def test_last_starts_fresh_then_resumes_from_the_newest(tmp_path):
    """The restart-safe script: the same line on the first attempt and on every restart."""
    mc = ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=2)
    first = _trainer(tmp_path, mc, max_steps=4, limit_train_batches=8)
    with pytest.warns(UserWarning, match=r'\.fit\(ckpt_path="last"\) is set, but there is no '
                                         r"last checkpoint available in default_root_dir="):
        first.fit(BoringModel(), ckpt_path="last")
    assert first.global_step == 4 and first.ckpt_path is None
    again = _trainer(tmp_path, ModelCheckpoint(dirpath=tmp_path / "ckpt",
                                               every_n_train_steps=2), max_steps=6,
                     limit_train_batches=8)
    again.fit(BoringModel(), ckpt_path="last")
    assert again.ckpt_path == str(tmp_path / "ckpt" / "epoch=0-step=4.ckpt")
    assert again.global_step == 6


def test_an_incomplete_or_unfinished_checkpoint_is_never_picked(tmp_path):
    ckpt = tmp_path / "ckpt"
    trainer = _trainer(tmp_path, ModelCheckpoint(dirpath=ckpt, every_n_train_steps=2),
                       max_steps=4, limit_train_batches=8)
    trainer.fit(BoringModel())
    good = ckpt / "epoch=0-step=4.ckpt"
    assert good.is_file()
    time.sleep(0.01)
    # what a job killed mid-save leaves: a temporary name (never a candidate) ...
    (ckpt / f".epoch=0-step=6.ckpt.tmp-host-{2 ** 22 + 1}-0").write_bytes(b"PK\x03\x04 half")
    # ... and, on a store without atomic renames, a truncated file under the final name
    truncated = ckpt / "epoch=0-step=6.ckpt"
    truncated.write_bytes(good.read_bytes()[:100])
    # a directory checkpoint whose manifest lists a file that is gone
    half_dir = ckpt / "epoch=0-step=8.ckpt"
    half_dir.mkdir()
    (half_dir / "fulmen_manifest.json").write_text(
        '{"files": {"__0_0.distcp": {"bytes": 10, "crc32c": "00000000"}}}')
    os.utime(half_dir)
    resumed = _trainer(tmp_path, ModelCheckpoint(dirpath=ckpt, every_n_train_steps=2),
                       max_steps=6, limit_train_batches=8)
    with pytest.warns(UserWarning, match="skipping checkpoint") as record:
        resumed.fit(BoringModel(), ckpt_path="last")
    skipped = " ".join(str(w.message) for w in record)
    assert "is incomplete" in skipped and "not a complete torch.save file" in skipped
    assert resumed.ckpt_path == str(good)
    shutil.rmtree(half_dir)
    assert torch.load(good, weights_only=True)["global_step"] == 4
