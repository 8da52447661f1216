"""``TQDMProgressBar``: tqdm bars (notebook widgets under Jupyter through ``tqdm.auto``)."""

from __future__ import annotations

import sys
import time
from importlib.util import find_spec
from typing import Any

from fulmen.callbacks.progress import RefreshingBar, convert_inf, interactive

_PAD_SIZE = 5


if find_spec("ipywidgets") is not None:  # notebook widgets where Jupyter can show them
    from tqdm.auto import tqdm as _tqdm
else:
    from tqdm import tqdm as _tqdm


class Tqdm(_tqdm):
    """A tqdm bar whose numbers are padded (``0.1`` → ``0.100``) so the postfix does not
    flicker."""

    @staticmethod
    def format_num(n: int | float | str) -> str:
        return format_num(n)


def format_num(n: int | float | str) -> str:
    """tqdm's number format, padded with zeros to five characters for floats and strings."""
    padded = isinstance(n, float | str)
    text = n if isinstance(n, str) else _tqdm.format_num(n)
    if padded and "e" not in text:
        if "." not in text and len(text) < _PAD_SIZE:
            try:
                float(text)
            except ValueError:
                return text
            text += "."
        text += "0" * (_PAD_SIZE - len(text))
    return text


class TQDMProgressBar(RefreshingBar):
    """The default progress bar: training (``Epoch N``, with validation runs inside), validation,
    test and predict bars on ``stdout``, each with rate, ETA and ``get_metrics()`` (``v_num`` and
    the ``prog_bar=True`` values).

    Args:
        refresh_rate: update the bars every this many batches; 0 turns them off.
        process_position: offset the bars by this many lines (other bars above them).
        leave: keep each epoch's finished training bar (else one bar is reused).
        interactive: draw bars (True) or, with False, print one summary line per epoch on rank
            zero instead (for logs and CI). None (default): bars on a terminal or in a notebook.

    A bar redraws — and reads the metrics, which copies logged device values to the host — at
    most every ``min_refresh_seconds`` (0.1 s) and at the end of each loader, not every batch:
    that keeps the per-step cost of the default bar to a counter update.
    """

    BAR_FORMAT = ("{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
                  "{rate_noinv_fmt}{postfix}]")
    min_refresh_seconds = 0.1

    def __init__(self, refresh_rate: int = 1, process_position: int = 0, leave: bool = False,
                 interactive: bool | None = None) -> None:
        super().__init__()
        if isinstance(refresh_rate, bool) or not isinstance(refresh_rate, int | float) \
                or not refresh_rate >= 0:
            from fulmen.errors import ConfigurationError

            if not isinstance(refresh_rate, int | float) or refresh_rate != refresh_rate:
                raise ConfigurationError(f"TQDMProgressBar(refresh_rate={refresh_rate!r}): use a "
                                         "number of batches >= 1, or 0 to turn the bars off")
            from fulmen.utilities.rank_zero import rank_zero_warn

            # Lightning runs a negative rate with the bars off
            rank_zero_warn(f"TQDMProgressBar(refresh_rate={refresh_rate!r}): a negative rate "
                           "turns the bars off, as in Lightning; pass 0 to say so",
                           category=UserWarning)
            refresh_rate = 0
        from fulmen import arguments

        arguments.check_bool("TQDMProgressBar", {"leave": leave, "interactive": interactive},
                             optional=("interactive",))
        self._refresh_rate = refresh_rate
        self._process_position = process_position
        self._leave = leave
        self._interactive = interactive
        self._enabled = True
        self._bars: dict[str, Any] = {}
        self._drawn: dict[str, float] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "_bars": {}}  # bars hold a file handle; spawn pickles callbacks

    # ------------------------------------------------------------------ Lightning's surface

    def _bar(self, key: str) -> Any:
        if key not in self._bars:
            raise TypeError(f"The `{type(self).__name__}._{key}_progress_bar` reference has "
                            "not been set yet.")
        return self._bars[key]

    @property
    def train_progress_bar(self) -> Any:
        return self._bar("train")

    @train_progress_bar.setter
    def train_progress_bar(self, bar: Any) -> None:
        self._bars["train"] = bar

    @property
    def val_progress_bar(self) -> Any:
        return self._bar("val")

    @val_progress_bar.setter
    def val_progress_bar(self, bar: Any) -> None:
        self._bars["val"] = bar

    @property
    def test_progress_bar(self) -> Any:
        return self._bar("test")

    @test_progress_bar.setter
    def test_progress_bar(self, bar: Any) -> None:
        self._bars["test"] = bar

    @property
    def predict_progress_bar(self) -> Any:
        return self._bar("predict")

    @predict_progress_bar.setter
    def predict_progress_bar(self, bar: Any) -> None:
        self._bars["predict"] = bar

    @property
    def process_position(self) -> int:
        return self._process_position

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        super().setup(trainer, module, stage)
        if self._interactive is None:
            self._interactive = interactive()

    @property
    def draws_bars(self) -> bool:
        """Whether bars are drawn (else one line per epoch is printed)."""
        return self.is_enabled and bool(self._interactive)

    _BATCH_HOOKS = ("on_train_batch_end", "on_validation_batch_start",
                    "on_validation_batch_end", "on_test_batch_start", "on_test_batch_end",
                    "on_predict_batch_start", "on_predict_batch_end")
    _BAR_MAKERS = ("init_sanity_tqdm", "init_train_tqdm", "init_validation_tqdm",
                   "init_test_tqdm", "init_predict_tqdm")

    def unused_hooks(self, trainer: Any, module: Any, stage: str) -> tuple[str, ...]:
        """No per-batch hook when no bar is drawn (not a terminal, another rank, or disabled),
        unless a subclass makes its own bars or overrides a batch hook."""
        own = type(self)
        if self.draws_bars or any(getattr(own, n) is not getattr(TQDMProgressBar, n)
                                  for n in self._BAR_MAKERS):
            return ()
        return tuple(n for n in self._BATCH_HOOKS
                     if getattr(own, n) is getattr(TQDMProgressBar, n))

    def _new(self, desc: str, position: int, leave: bool, smoothing: float = 0.3) -> Any:
        return Tqdm(desc=desc, position=position, disable=not self.draws_bars, leave=leave,
                    dynamic_ncols=True, file=sys.stdout, smoothing=smoothing,
                    bar_format=self.BAR_FORMAT)

    def init_sanity_tqdm(self) -> Any:
        return self._new(self.sanity_check_description, 2 * self.process_position, False)

    def init_train_tqdm(self) -> Any:
        return self._new(self.train_description, 2 * self.process_position, True, 0)

    def init_predict_tqdm(self) -> Any:
        return self._new(self.predict_description, 2 * self.process_position, True, 0)

    def init_validation_tqdm(self) -> Any:
        has_main_bar = self.trainer.state.fn != "validate"
        return self._new(self.validation_description,
                         2 * self.process_position + has_main_bar, not has_main_bar)

    def init_test_tqdm(self) -> Any:
        return self._new(self.test_description, 2 * self.process_position, True)

    # ------------------------------------------------------------------ drawing

    def _restart(self, key: str, total: int | float | None, desc: str) -> None:
        bar = self._bars[key]
        bar.reset()
        bar.total = convert_inf(total)
        bar.initial = 0
        bar.set_description(desc)
        self._drawn[key] = 0.0

    def _advance(self, key: str, n: int, metrics: Any = None) -> None:
        """Move bar ``key`` to ``n``; redraw (with ``metrics()`` as postfix) when due."""
        bar = self._bars.get(key)
        if bar is None or bar.disable:
            return
        total = bar.total
        if n % self.refresh_rate and n != total:
            return
        now = time.monotonic()
        if n != total and now - self._drawn.get(key, 0.0) < self.min_refresh_seconds:
            bar.n = n  # counted; drawn at the next due refresh
            return
        self._drawn[key] = now
        bar.n = n
        if metrics is not None:
            bar.set_postfix(metrics(), refresh=False)
        bar.refresh()

    def _close(self, key: str) -> None:
        bar = self._bars.get(key)
        if bar is not None:
            bar.close()

    def on_sanity_check_start(self, trainer: Any, module: Any) -> None:
        self.val_progress_bar = self.init_sanity_tqdm()
        self.train_progress_bar = Tqdm(disable=True)  # placeholder until training starts

    def on_sanity_check_end(self, trainer: Any, module: Any) -> None:
        self._close("val")
        self._close("train")

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self.train_progress_bar = self.init_train_tqdm()

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self._leave:
            self.train_progress_bar = self.init_train_tqdm()
        self._restart("train", self.total_train_batches, f"Epoch {trainer.current_epoch}")

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._advance("train", batch_idx + 1, lambda: self.get_metrics(trainer, module))

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        bar = self._bars.get("train")
        if bar is not None and not bar.disable:
            bar.set_postfix(self.get_metrics(trainer, module))
        elif trainer.is_global_zero and self.is_enabled and not self._interactive:
            metrics = ", ".join(f"{k}={format_num(v) if isinstance(v, float) else v}"
                                for k, v in self.get_metrics(trainer, module).items())
            from fulmen.status import configure_logging

            configure_logging().info("Epoch %d: %d steps%s", trainer.current_epoch,
                                     trainer.global_step, f", {metrics}" if metrics else "")
        if self._leave:
            self._close("train")

    def on_train_end(self, trainer: Any, module: Any) -> None:
        self._close("train")

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        if not trainer.sanity_checking:
            self.val_progress_bar = self.init_validation_tqdm()

    def on_validation_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                                  dataloader_idx: int = 0) -> None:
        if self.has_dataloader_changed(dataloader_idx):
            desc = self.sanity_check_description if trainer.sanity_checking else \
                self.validation_description
            self._restart("val", self.total_val_batches_current_dataloader,
                          f"{desc} DataLoader {dataloader_idx}")

    def on_validation_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        self._advance("val", batch_idx + 1)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        self._close("val")
        self.reset_dataloader_idx_tracker()
        bar = self._bars.get("train")
        if bar is not None and trainer.state.fn == "fit" and not bar.disable:
            bar.set_postfix(self.get_metrics(trainer, module))

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self.test_progress_bar = self.init_test_tqdm()

    def on_test_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                            dataloader_idx: int = 0) -> None:
        if self.has_dataloader_changed(dataloader_idx):
            self._restart("test", self.total_test_batches_current_dataloader,
                          f"{self.test_description} DataLoader {dataloader_idx}")

    def on_test_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        self._advance("test", batch_idx + 1)

    def on_test_end(self, trainer: Any, module: Any) -> None:
        self._close("test")
        self.reset_dataloader_idx_tracker()

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self.predict_progress_bar = self.init_predict_tqdm()

    def on_predict_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                               dataloader_idx: int = 0) -> None:
        if self.has_dataloader_changed(dataloader_idx):
            self._restart("predict", self.total_predict_batches_current_dataloader,
                          f"{self.predict_description} DataLoader {dataloader_idx}")

    def on_predict_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                             batch_idx: int, dataloader_idx: int = 0) -> None:
        self._advance("predict", batch_idx + 1)

    def on_predict_end(self, trainer: Any, module: Any) -> None:
        self._close("predict")
        self.reset_dataloader_idx_tracker()

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        for key in list(self._bars):
            self._close(key)

    def print(self, *args: Any, sep: str = " ", **kwargs: Any) -> None:
        """Print above the active bar."""
        active = next((b for k in ("predict", "test", "val", "train")
                       if (b := self._bars.get(k)) is not None and not b.disable), None)
        if active is None:
            print(*args, sep=sep, **kwargs)
        else:
            active.write(sep.join(map(str, args)), **kwargs)
