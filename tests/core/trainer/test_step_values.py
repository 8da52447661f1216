"""Step values logged from CPU tensors are kept as numbers (holding the tensor kept its storage
alive into the next step), and still reach callbacks as the tensors they were logged as and
loggers as floats."""

from __future__ import annotations

from typing import Any

import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.loggers import Logger


class Logs(TinyModule):
    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss = super().training_step(batch, batch_idx)
        self.log("precise", torch.tensor(1 / 3, dtype=torch.float64))
        self.log("count", torch.tensor(batch_idx + 7))
        self.log("shaped", torch.full((1,), 2.5))
        self.log("both", loss, on_step=True, on_epoch=True)
        return loss


class Seen(fulmen.Callback):
    def __init__(self) -> None:
        self.metrics: list[dict[str, torch.Tensor]] = []

    def on_train_batch_end(self, trainer: Any, module: Any, *args: Any) -> None:
        self.metrics.append(dict(trainer.callback_metrics))


class Memory(Logger):
    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[str, float]]] = []

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.rows.append((step, dict(metrics)))

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        pass


def test_cpu_step_values_reach_callbacks_as_tensors_and_loggers_as_floats(tmp_path: Any) -> None:
    seen, memory = Seen(), Memory()
    trainer = fulmen.Trainer(**lean(max_epochs=1, callbacks=[seen], logger=memory,
                                    log_every_n_steps=1, default_root_dir=tmp_path))
    trainer.fit(Logs(), loader(n=32))
    last = seen.metrics[-1]
    assert last["precise"].dtype == torch.float64 and last["precise"].item() == 1 / 3
    assert last["count"].dtype == torch.int64 and last["count"].item() == 3 + 7
    assert last["shaped"].shape == (1,) and last["shaped"].item() == 2.5
    assert isinstance(last["both_step"], torch.Tensor) and not last["both_step"].requires_grad
    assert "both" in last  # on_step and on_epoch: also under its plain name during the epoch
    step, values = memory.rows[0]
    assert step == 0 and values["precise"] == 1 / 3 and values["count"] == 7.0
    assert values["shaped"] == 2.5 and all(type(v) is float for v in values.values())
